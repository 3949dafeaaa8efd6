"""Correct torch_xla 2.9 migration of mlp_cuda.py."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader, TensorDataset


def make_model():
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Dropout(0.25), nn.Linear(32, 4))


def make_loader(data_seed=0):
    g = torch.Generator().manual_seed(data_seed)
    dataset = TensorDataset(
        torch.randn(96, 12, generator=g), torch.randint(0, 4, (96,), generator=g)
    )
    return DataLoader(dataset, batch_size=16, shuffle=False, drop_last=True)


def _log(epoch, step, loss):
    print(f"epoch {epoch} step {step} loss {loss.item():.4f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    device = torch_xla.device()
    torch.manual_seed(1)
    torch_xla.manual_seed(1)
    model = make_model().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loader = pl.MpDeviceLoader(make_loader(), device)
    for epoch in range(args.epochs):
        model.train()
        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            xm.optimizer_step(optimizer)
            if step % 4 == 0:
                xm.add_step_closure(_log, args=(epoch, step, loss))


if __name__ == "__main__":
    main()
