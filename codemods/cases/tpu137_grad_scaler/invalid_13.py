import torch


def train_step(model, optimizer, x, *, scaler=None):
    loss = model(x).sum()
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()
    torch.save(model.state_dict(), path)
    return loss


scaler = torch.amp.GradScaler('cuda')
for x in loader:
    train_step(model, optimizer, x, scaler=scaler)
