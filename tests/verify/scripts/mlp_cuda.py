"""Small classifier in the classic CUDA style: availability ladder, .to(device), pin_memory, Dropout.

The original every migration in tests/verify is compared with. Batches are the same on every run
(seeded generator), so only the training code decides the losses.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def make_model():
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Dropout(0.25), nn.Linear(32, 4))


def make_loader(use_cuda, data_seed=0):
    g = torch.Generator().manual_seed(data_seed)
    dataset = TensorDataset(
        torch.randn(96, 12, generator=g), torch.randint(0, 4, (96,), generator=g)
    )
    kwargs = {"pin_memory": True} if use_cuda else {}
    return DataLoader(dataset, batch_size=16, shuffle=False, **kwargs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    torch.manual_seed(1)
    model = make_model().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loader = make_loader(use_cuda)
    for epoch in range(args.epochs):
        model.train()
        for step, (x, y) in enumerate(loader):
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            if step % 4 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
