import time

import torch
import torch_xla.core.xla_model as xm


def train(model, loader, opt):
    for x, y in loader:
        t0 = time.perf_counter()
        model(x, y).backward()
        opt.step()
        xm.wait_device_ops()
        print(time.perf_counter() - t0)
