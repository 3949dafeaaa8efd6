from torch.cuda.amp import GradScaler, autocast

scaler = GradScaler(enabled=args.amp)


def train_step(x, y):
    with autocast(enabled=args.amp):
        loss = criterion(model(x), y)
    # unscale before clipping
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    return loss
