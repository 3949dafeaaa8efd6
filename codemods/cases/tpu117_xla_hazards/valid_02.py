import torch


def train(model, loader, opt, criterion):
    for epoch in range(10):
        if epoch < 3:
            warmup(opt)
        for x, y in loader:
            loss = criterion(model(x), y)
            if loss.item() > 100:
                continue
            loss.backward()
            opt.step()
