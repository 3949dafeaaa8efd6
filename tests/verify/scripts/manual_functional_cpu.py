"""Linear regression from scratch: raw leaf tensors, no nn.Module and no torch.optim.

No module is called after backward(), so each update is seen at the next backward(). --dump FILE
writes, after each update, the loss of its backward and the parameters (JSON, for the tests).
"""

import argparse
import json

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--updates", type=int, default=8)
    parser.add_argument("--dump", default=None)
    args = parser.parse_args()

    torch.manual_seed(1)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 5, generator=g)
    y = x @ torch.randn(5, 1, generator=g) + 0.5
    w = torch.randn(5, 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    dumped = []
    for _ in range(args.updates):
        loss = ((torch.tanh(x @ w + b) * 3 - y) ** 2).mean()
        loss.backward()
        w.data -= args.lr * w.grad
        b.data -= args.lr * b.grad
        w.grad.zero_()
        b.grad.zero_()
        if args.dump:
            dumped.append({"loss": loss.item(), "params": [w.tolist(), b.tolist()]})
            with open(args.dump, "w") as handle:
                json.dump(dumped, handle)


if __name__ == "__main__":
    main()
