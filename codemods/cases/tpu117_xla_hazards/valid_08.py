import torch


def train(model, loader, opt):
    for x, y in loader:
        loss = model(x, y)
        if loss is None or y.shape[0] < 2:
            continue
        loss.backward()
        opt.step()
        scores = torch.where(y > 0, loss, 0.0)
