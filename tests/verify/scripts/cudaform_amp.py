"""Mixed precision in its CUDA spellings: autocast regions and a GradScaler stepping the optimizer.

--api cuda_amp  torch.cuda.amp.autocast() + torch.cuda.amp.GradScaler()
--api amp       torch.autocast("cuda", dtype=torch.float16) + torch.amp.GradScaler("cuda")
--clip          scaler.unscale_(optimizer) and clip_grad_norm_ before scaler.step
Each step prints the loss it computed (before scaling) as "loss=<float>".
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--api", choices=["cuda_amp", "amp"], default="amp")
    parser.add_argument("--clip", action="store_true")
    args = parser.parse_args()

    device = torch.device("cuda")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    if args.api == "cuda_amp":
        scaler = torch.cuda.amp.GradScaler()
        autocast = torch.cuda.amp.autocast
    else:
        scaler = torch.amp.GradScaler("cuda")

        def autocast():
            return torch.autocast("cuda", dtype=torch.float16)

    assert scaler.is_enabled()
    g = torch.Generator().manual_seed(4)
    xs = torch.randn(10, 16, 8, generator=g)
    ys = xs.sum(-1, keepdim=True).tanh()
    for x, y in zip(xs, ys):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            loss = F.mse_loss(model(x).float(), y)
        print(f"loss={loss.item()!r}", flush=True)
        scaler.scale(loss).backward()
        if args.clip:
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        assert scaler.get_scale() == 65536.0, scaler.get_scale()  # no step skipped for inf/nan


if __name__ == "__main__":
    main()
