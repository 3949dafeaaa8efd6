import torch


def evaluate(model, loader):
    total, correct = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            total += criterion(out, y).item()
            correct += (out.argmax(1) == y).sum().item()
    return total / len(loader), correct
