"""Naive migration of loop_cuda.py: partial last batch kept, loss.item() read inside every step.

Correct numbers, poor TPU hygiene (idioms doc 5.1, mode a): the read cuts each step's graph in two
and the odd-sized batch compiles new graphs.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--drop-last", action="store_true")
args = parser.parse_args()

device = torch_xla.device()
torch.manual_seed(0)
g = torch.Generator().manual_seed(2)
dataset = TensorDataset(torch.randn(90, 20, generator=g), torch.randint(0, 3, (90,), generator=g))
loader = DataLoader(dataset, batch_size=20, shuffle=False, drop_last=args.drop_last)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 3)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for epoch in range(3):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"loss {loss.item():.4f}")
        torch_xla.sync()
