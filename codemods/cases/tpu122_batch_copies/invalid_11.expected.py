import torch
import torch_xla
from torch.utils.data import DataLoader
import torch_xla.distributed.parallel_loader as pl

device = torch_xla.device()
loader_kwargs = {
    'batch_size': 32,
}
loader = DataLoader(
    ds,
    **loader_kwargs,
)
device_loader = pl.MpDeviceLoader(loader, device)
for i, (x, y) in enumerate(device_loader):
    z = x + y
