import torch
import torch_xla
from torch.utils.data import DataLoader
import torch_xla.distributed.parallel_loader as pl

device = torch_xla.device()
if args.augment:
    train_loader = DataLoader(aug_ds, batch_size=32)
else:
    train_loader = DataLoader(plain_ds, batch_size=32)
train_device_loader = pl.MpDeviceLoader(train_loader, device)
for epoch in range(3):
    for batch in train_device_loader:
        outputs = model(**batch)
