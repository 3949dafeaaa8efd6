import time

import torch


def train(model, loader, opt):
    for x, y in loader:
        t0 = time.perf_counter()
        model(x, y).backward()
        opt.step()
        torch.cuda.synchronize()
        print(time.perf_counter() - t0)
