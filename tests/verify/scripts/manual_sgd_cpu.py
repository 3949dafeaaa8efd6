"""Training without torch.optim, as in pytorch/examples: backward(), then each parameter updated by hand.

--style picks how the update is written: data (regression/main.py), alpha (word_language_model, after
clip_grad_norm_), no_grad (``p -= lr * p.grad``), assign (``p.data = p.data - lr * p.grad``) or
none (the parameters are only read: nothing trains).
--accumulate K runs K backward() per update; --dump FILE writes, for the tests (JSON), how many
forward calls started and, after each update, the loss of its last backward and the parameters.
"""

import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--updates", type=int, default=8)
    parser.add_argument("--accumulate", type=int, default=1)
    parser.add_argument(
        "--style", default="data", choices=["data", "alpha", "no_grad", "assign", "none"]
    )
    parser.add_argument("--dump", default=None)
    args = parser.parse_args()

    torch.manual_seed(1)
    fc = make_model()
    data = batches(args.updates * args.accumulate)
    dumped = {"forwards": 0, "updates": []}

    def dump():
        if args.dump:
            with open(args.dump, "w") as handle:
                json.dump(dumped, handle)

    def count_forward(module, inputs):
        dumped["forwards"] += 1
        dump()

    fc.register_forward_pre_hook(count_forward)
    for _ in range(args.updates):
        fc.zero_grad()
        for _ in range(args.accumulate):
            batch_x, batch_y = next(data)
            output = F.smooth_l1_loss(fc(batch_x), batch_y)
            loss = output.item()
            output.backward()
        update(fc, args.lr, args.style)
        params = [p.detach().tolist() for p in fc.parameters()]
        dumped["updates"].append({"loss": loss, "params": params})
        dump()
    print(f"final loss {loss:.6f}")


if __name__ == "__main__":
    main()
