import torch
import torch_xla


def train_epoch(model, loader, optimizer, criterion):
    running = 0.0
    correct = 0
    for x, y in loader:
        optimizer.zero_grad()
        out = model(x)
        loss = criterion(out, y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        running += loss.item() * x.size(0)
        correct += out.argmax(1).eq(y).sum().item()
    n = len(loader.dataset)
    return running / n, correct / n
