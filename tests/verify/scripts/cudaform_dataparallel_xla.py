"""Correct torch_xla 2.9 migration of cudaform_dataparallel.py (--form plain): no wrapper on XLA."""

import argparse

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh())
        self.classifier = nn.Linear(16, 3)

    def forward(self, x):
        return self.classifier(self.features(x))


def make_loader():
    g = torch.Generator().manual_seed(7)
    dataset = TensorDataset(
        torch.randn(48, 10, generator=g), torch.randint(0, 3, (48,), generator=g)
    )
    return DataLoader(dataset, batch_size=8, shuffle=False, drop_last=True)


def _log(epoch, i, loss):
    print(f"epoch {epoch} batch {i} loss {loss.item():.4f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--form", default="plain")
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    device = torch_xla.device()
    torch.manual_seed(0)
    model = Net()
    model = model.to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loader = pl.MpDeviceLoader(make_loader(), device)
    for epoch in range(args.epochs):
        model.train()
        for i, (images, target) in enumerate(loader):
            output = model(images)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            xm.optimizer_step(optimizer)
            if i % 2 == 0:
                xm.add_step_closure(_log, args=(epoch, i, loss))


if __name__ == "__main__":
    main()
