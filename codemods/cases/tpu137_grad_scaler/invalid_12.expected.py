import torch


def train_step(model, optimizer, x):
    loss = model(x).sum()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss


for x in loader:
    train_step(model, optimizer, x)
