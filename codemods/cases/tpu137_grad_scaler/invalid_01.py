from torch.cuda.amp import GradScaler
import torch

scaler = GradScaler(enabled=args.amp)


def train_step(x, y):
    with torch.autocast("xla", dtype=torch.bfloat16, enabled=args.amp):
        loss = criterion(model(x), y)
    # unscale before clipping
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    return loss
