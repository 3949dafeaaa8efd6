import torch
import torch_xla
from torch.utils.data import DataLoader
import torch_xla.distributed.parallel_loader as pl

device = torch_xla.device() if opt.accel else torch.device('cpu')
train_loader = DataLoader(train_set, batch_size=opt.batch_size, shuffle=True)
train_device_loader = pl.MpDeviceLoader(train_loader, device) if device.type == "xla" else train_loader

for epoch in range(opt.epochs):
    for iteration, batch in enumerate(train_device_loader, 1):
        input, target = batch[0].to(device), batch[1].to(device)
        loss = criterion(model(input), target)
