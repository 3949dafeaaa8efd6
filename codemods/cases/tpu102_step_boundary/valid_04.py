import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl

device = torch_xla.device()
train_device_loader = pl.MpDeviceLoader(train_loader, device)
for epoch in range(3):
    for step, (x, y) in enumerate(train_device_loader):
        loss = model(x, y)
        loss.backward()
        xm.optimizer_step(optimizer)
