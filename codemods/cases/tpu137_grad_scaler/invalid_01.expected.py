import torch


def train_step(x, y):
    with torch.autocast("xla", dtype=torch.bfloat16, enabled=args.amp):
        loss = criterion(model(x), y)
    # unscale before clipping
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss
