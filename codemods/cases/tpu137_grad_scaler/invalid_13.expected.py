import torch


def train_step(model, optimizer, x):
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
    torch.save(model.state_dict(), path)
    return loss


for x in loader:
    train_step(model, optimizer, x)
