import torch
import torch.nn as nn


def train(model, loader, opt):
    criterion = nn.CrossEntropyLoss()
    best = float("inf")
    for x, y in loader:
        loss = criterion(model(x), y)
        # TODO(tpu-migrate): TPU252 Python if on a tensor value syncs with the host every step
        if loss < best:
            best = loss
        loss.backward()
        opt.step()
