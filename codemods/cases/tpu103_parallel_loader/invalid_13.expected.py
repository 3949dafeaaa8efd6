import torch
import torch_xla
from torch.utils.data import DataLoader
import torch_xla.distributed.parallel_loader as pl

device = torch_xla.device()
loader = DataLoader(ds, batch_size=8)


def curriculum(ds):
    for epoch in range(3):
        loader = DataLoader(ds, batch_size=2**epoch)
        device_loader = pl.MpDeviceLoader(loader, device)
        for x in device_loader:
            x = x.to(device)  # copy to the accelerator
            train_on(x)


def warmup():
    device_loader = pl.MpDeviceLoader(loader, device)
    for epoch in range(2):
        for x in device_loader:

            # the batch must live on the device
            x = x.to(device)
            train_on(x)
