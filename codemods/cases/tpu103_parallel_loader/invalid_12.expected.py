import torch
import torch_xla
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader


def main():
    device = torch_xla.device()
    train_loader = DataLoader(train_ds, batch_size=8)
    val_loader = DataLoader(val_ds, batch_size=8)
    val_device_loader = pl.MpDeviceLoader(val_loader, device)
    train_device_loader = pl.MpDeviceLoader(train_loader, device)
    for epoch in range(2):
        for x, y in train_device_loader:
            train_step(x, y)
        for x, y in val_device_loader:
            x, y = x.to(device), y.to(device)
            eval_step(x, y)
        for x, y in train_device_loader:
            probe(x)
