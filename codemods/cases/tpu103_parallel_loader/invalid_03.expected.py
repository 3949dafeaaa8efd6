import torch
import torch_xla
from torch.utils.data import DataLoader
import torch_xla.distributed.parallel_loader as pl

device = torch_xla.device()
train_loader = DataLoader(train_ds, batch_size=64, shuffle=True)
train_device_loader = pl.MpDeviceLoader(train_loader, device)
for epoch in range(10):
    for data, target in train_device_loader:
        data, target = data.to(device), target.to(device)
        loss = loss_fn(model(data), target)
    print(epoch, len(train_loader))
