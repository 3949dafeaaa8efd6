"""Correct torch_xla 2.9 port of manual_sgd_cpu.py (same options but --dump)."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


def make_model():
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 1))


def batches(count, size=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(6, 1, generator=g)
    for _ in range(count):
        x = torch.randn(size, 6, generator=g)
        yield x, x @ w + 0.1 * torch.randn(size, 1, generator=g)


def update(model, lr, style):
    if style == "alpha":
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    for p in model.parameters():
        if style == "data":
            p.data.add_(-lr * p.grad)
        elif style == "alpha":
            p.data.add_(p.grad, alpha=-lr)
        elif style == "none":  # reads the parameters, never changes them: no step
            p.data.norm()
        elif style == "no_grad":
            with torch.no_grad():
                p -= lr * p.grad
        else:
            p.data = p.data - lr * p.grad


def main(lr_scale=1.0):
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--updates", type=int, default=8)
    parser.add_argument("--accumulate", type=int, default=1)
    parser.add_argument(
        "--style", default="data", choices=["data", "alpha", "no_grad", "assign", "none"]
    )
    args = parser.parse_args()

    device = torch_xla.device()
    torch.manual_seed(1)
    fc = make_model().to(device)
    data = batches(args.updates * args.accumulate)
    for _ in range(args.updates):
        fc.zero_grad()
        for _ in range(args.accumulate):
            batch_x, batch_y = (t.to(device) for t in next(data))
            output = F.smooth_l1_loss(fc(batch_x), batch_y)
            output.backward()
        update(fc, args.lr * lr_scale, args.style)
        torch_xla.sync()
    print(f"final loss {output.item():.6f}")


if __name__ == "__main__":
    main()
