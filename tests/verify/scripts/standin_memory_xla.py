"""Correct torch_xla 2.9 port of standin_memory_cuda.py, with the TPU runtime APIs a TPU script uses
and XLA:CPU cannot run: xm.get_memory_info (also imported by name), torch_xla.amp.autocast, the TPU
version from the host metadata, the number of TPU devices on the host and the master IP."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla._internal.tpu as tpu
import torch_xla.amp
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
from torch_xla.core.xla_model import get_memory_info

device = torch_xla.device()
torch.manual_seed(0)
torch_xla.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(1)
x, y = torch.randn(24, 10, generator=g), torch.randint(0, 3, (24,), generator=g)
print("tpu:", xm.xla_device_kind(device), "v%d" % tpu.version(), "master", xr.get_master_ip())
print("devices on this host:", tpu.num_available_devices())
for step in range(10):
    with torch_xla.amp.autocast(device):
        loss = F.cross_entropy(model(x.to(device)), y.to(device))
    info = xm.get_memory_info(device)
    assert set(info) == {"bytes_used", "bytes_limit", "peak_bytes_used"}, info
    assert all(isinstance(v, int) for v in info.values()), info
    assert 0 < info["bytes_used"] <= info["peak_bytes_used"] <= info["bytes_limit"], info
    print(
        f"step {step}: {info['bytes_used']} bytes in use, peak {get_memory_info(device)['peak_bytes_used']}"
    )
    optimizer.zero_grad()
    loss.backward()
    xm.optimizer_step(optimizer)
    torch_xla.sync()
