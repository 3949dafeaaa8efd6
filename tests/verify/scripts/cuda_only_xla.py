"""Correct torch_xla 2.9 migration of cuda_only.py."""

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

torch.manual_seed(0)
device = torch_xla.device()

model = nn.Sequential(nn.Linear(6, 24), nn.GELU(), nn.LayerNorm(24), nn.Linear(24, 1)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
g = torch.Generator().manual_seed(3)
xs = torch.randn(8, 16, 6, generator=g)
ys = (xs.sum(-1, keepdim=True) > 0).float()
scale = torch.full((1,), 0.5, device=device)

for x, y in zip(xs, ys):
    x, y = x.to(device), y.to(device)
    optimizer.zero_grad(set_to_none=True)
    loss = nn.functional.binary_cross_entropy_with_logits(model(x) * scale, y)
    loss.backward()
    xm.optimizer_step(optimizer)
    torch_xla.sync()
xm.wait_device_ops()
