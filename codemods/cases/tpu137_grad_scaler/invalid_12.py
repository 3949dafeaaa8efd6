import torch


def train_step(model, scaler, optimizer, x):
    loss = model(x).sum()
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    return loss


scaler = torch.cuda.amp.GradScaler()
for x in loader:
    train_step(model, scaler, optimizer, x)
