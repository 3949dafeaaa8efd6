import torch
import torch_xla


def train(model, loader, optimizer):
    best = float("inf")
    history = []
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        history.append(loss.item())
        if loss.item() < best:
            best = loss.item()
        torch_xla.sync()
    return history
