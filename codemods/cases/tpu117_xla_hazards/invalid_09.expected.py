import torch


def step(model, x, y, opt):
    loss = model(x, y)
    loss.backward()
    opt.step()
    # TODO(tpu-migrate): TPU251 .nonzero() has a data-dependent shape: XLA recompiles for each new count
    hits = (loss > 0).nonzero()
    # TODO(tpu-migrate): TPU253 .cpu() copies to the host on every step; read values every N steps
    return hits.cpu()


def fit(model, loader, opt):
    for epoch in range(2):
        for x, y in loader:
            step(model, x, y, opt)
