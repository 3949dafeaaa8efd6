"""Correct torch_xla 2.9 port of manual_functional_cpu.py (without --dump)."""

import argparse

import torch
import torch_xla


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--updates", type=int, default=8)
    args = parser.parse_args()

    device = torch_xla.device()
    torch.manual_seed(1)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 5, generator=g)
    y = x @ torch.randn(5, 1, generator=g) + 0.5
    x, y = x.to(device), y.to(device)
    w = torch.randn(5, 1).to(device).requires_grad_()
    b = torch.zeros(1, device=device, requires_grad=True)
    for _ in range(args.updates):
        loss = ((torch.tanh(x @ w + b) * 3 - y) ** 2).mean()
        loss.backward()
        w.data -= args.lr * w.grad
        b.data -= args.lr * b.grad
        w.grad.zero_()
        b.grad.zero_()
        torch_xla.sync()


if __name__ == "__main__":
    main()
