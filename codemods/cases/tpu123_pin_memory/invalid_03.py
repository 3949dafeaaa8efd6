import torch
import torch_xla
from torch.utils.data import DataLoader

device = torch_xla.device()
loader_kwargs = {
    'batch_size': 32,
    'pin_memory': True,
}
loader = DataLoader(
    ds,
    **loader_kwargs,
    pin_memory=True,
)
for i, (x, y) in enumerate(loader):
    x = x.to(device); y = y.to(device); z = x + y
