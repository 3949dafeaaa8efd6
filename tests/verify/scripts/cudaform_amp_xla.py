"""Correct torch_xla 2.9 migration of cudaform_amp.py: bf16 autocast on XLA, no loss scaling."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--api", default="amp")
    parser.add_argument("--clip", action="store_true")
    args = parser.parse_args()

    device = torch_xla.device()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(4)
    xs = torch.randn(10, 16, 8, generator=g)
    ys = xs.sum(-1, keepdim=True).tanh()
    for x, y in zip(xs, ys):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("xla", dtype=torch.bfloat16):
            loss = F.mse_loss(model(x).float(), y)
        loss.backward()
        if args.clip:
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        xm.optimizer_step(optimizer)
        torch_xla.sync()


if __name__ == "__main__":
    main()
