import torch
import torch_xla
from torch.utils.data import DataLoader

device = torch_xla.device()
loader_kwargs = {
    'batch_size': 32,
}
loader = DataLoader(
    ds,
    **loader_kwargs,
)
for i, (x, y) in enumerate(loader):
    x = x.to(device); y = y.to(device); z = x + y
