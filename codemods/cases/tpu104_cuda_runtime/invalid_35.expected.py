import torch
import torch_xla.core.xla_model as xm


def train(model, loader, opt):
    for epoch in range(3):
        for x, y in loader:
            opt.zero_grad()
            loss = model(x, y)
            loss.backward()
            opt.step()
        xm.wait_device_ops()
