"""An optimizer run that also changes its parameters in place: WGAN-style weight clipping after each step.

Only the optimizer steps count. --dump FILE writes, after each step, its loss and the parameters (JSON).
"""

import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


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
    parser.add_argument("--dump", default=None)
    args = parser.parse_args()

    torch.manual_seed(1)
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    dumped = []
    for x, y in batches(args.updates):
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        for p in model.parameters():
            p.data.clamp_(-0.3, 0.3)
        if args.dump:
            dumped.append({"loss": loss.item(), "params": [p.tolist() for p in model.parameters()]})
            with open(args.dump, "w") as handle:
                json.dump(dumped, handle)


if __name__ == "__main__":
    main()
