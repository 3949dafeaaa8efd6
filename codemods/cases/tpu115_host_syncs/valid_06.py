import numpy as np
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl

for x, y in pl.MpDeviceLoader(loader, device):
    loss = model(x, y)
    loss.backward()
    xm.optimizer_step(optimizer)
    xm.add_step_closure(lambda: print(loss.item()))
    scale = np.array([0.5]).item(0)
