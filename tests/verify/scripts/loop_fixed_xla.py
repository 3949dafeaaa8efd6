"""Idiomatic migration of loop_cuda.py (run with --drop-last): MpDeviceLoader, xm.optimizer_step,
throttled logging in a step closure (idioms doc 5.1, mode b')."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--drop-last", action="store_true")
args = parser.parse_args()


def log(loss):
    print(f"loss {loss.item():.4f}")


device = torch_xla.device()
torch.manual_seed(0)
g = torch.Generator().manual_seed(2)
dataset = TensorDataset(torch.randn(90, 20, generator=g), torch.randint(0, 3, (90,), generator=g))
loader = pl.MpDeviceLoader(
    DataLoader(dataset, batch_size=20, shuffle=False, drop_last=args.drop_last), device
)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 3)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
step = 0
for epoch in range(3):
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        xm.optimizer_step(optimizer)
        step += 1
        if step % 4 == 0:
            xm.add_step_closure(log, args=(loss,))
