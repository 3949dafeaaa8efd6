import torch_xla
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader

device = torch_xla.device()
loader = DataLoader(ds, batch_size=8, drop_last=True)
device_loader = pl.MpDeviceLoader(loader, device)
for epoch in range(3):
    for x, y in device_loader:
        loss = model(x.to(torch.float32)).sum()
print(len(loader.dataset))
