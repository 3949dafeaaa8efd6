import torch


def step(model, x, y, opt):
    loss = model(x, y)
    loss.backward()
    opt.step()
    hits = (loss > 0).nonzero()
    return hits.cpu()


def fit(model, loader, opt):
    for epoch in range(2):
        for x, y in loader:
            step(model, x, y, opt)
