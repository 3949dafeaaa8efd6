import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


def train(model, loader, optimizer, device):
    for x, y in pl.MpDeviceLoader(loader, device):
        optimizer.zero_grad()
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        xm.add_step_closure(lambda loss: print(f"loss {loss.item():.4f}"), args=(loss,))
