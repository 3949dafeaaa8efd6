"""Correct torch_xla 2.9 port of manual_clamp_opt_cpu.py (without --dump)."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


def make_model():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))


def batches(count, size=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(count):
        x = torch.randn(size, 6, generator=g)
        yield x, x.sum(dim=1, keepdim=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--updates", type=int, default=8)
    args = parser.parse_args()

    device = torch_xla.device()
    torch.manual_seed(1)
    model = make_model().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for x, y in batches(args.updates):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        for p in model.parameters():
            p.data.clamp_(-0.3, 0.3)
        torch_xla.sync()


if __name__ == "__main__":
    main()
