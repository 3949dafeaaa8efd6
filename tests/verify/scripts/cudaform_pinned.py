"""Pinned host memory and asynchronous copies.

DataLoader(pin_memory=True) (--workers N), tensor.pin_memory(), a staging buffer made with
torch.empty(..., pin_memory=True) and filled with copy_(non_blocking=True), is_pinned() checks
and .to(device, non_blocking=True).
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()

    device = torch.device("cuda:0")
    g = torch.Generator().manual_seed(6)
    inputs = torch.randn(48, 5, generator=g)
    targets = torch.randn(48, 1, generator=g)
    pinned = inputs.pin_memory()
    assert torch.equal(pinned, inputs) and pinned.data_ptr() != inputs.data_ptr()
    loader = DataLoader(
        TensorDataset(pinned, targets), batch_size=8, pin_memory=True, num_workers=args.workers
    )
    staging = torch.empty(8, 5, pin_memory=True)
    zeros = torch.zeros(8, 1, pin_memory=True)
    assert staging.device.type == zeros.device.type == "cpu"

    torch.manual_seed(0)
    model = nn.Linear(5, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            staging.copy_(x, non_blocking=True)
            if not staging.is_pinned():  # the usual guard; pinning is a no-op on the CPU
                staging = staging.pin_memory()
            x = staging.to(device, non_blocking=True)
            y = (y.pin_memory() + zeros).to(device, non_blocking=True)
            loss = F.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
