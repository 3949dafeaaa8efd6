"""Every spelling of "the GPU" a script uses for tensors and modules, in one training loop.

.cuda(args.gpu), .cuda(0), .cuda(non_blocking=True), .cuda(device=0), module.cuda(0), .to(args.gpu),
torch.device("cuda", 0), torch.device("cuda:1"), "cuda:N" strings, device=f"cuda:{rank}", the
legacy torch.cuda.FloatTensor / LongTensor types and torch.Generator(device="cuda").
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def on_cpu(*tensors):
    return all(t.device.type == "cpu" for t in tensors)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", type=int, default=0)
    args = parser.parse_args()
    rank = 0

    device = torch.device("cuda", 0)
    other = torch.device("cuda:1")
    assert device.type == "cuda" and device.index == 0 and other.index == 1

    torch.manual_seed(0)
    body = nn.Sequential(nn.Linear(6, 12), nn.ReLU()).cuda(args.gpu)
    head = nn.Linear(12, 2).cuda(0)
    extra = nn.Linear(2, 2).cuda(device=0).to(args.gpu).to(device)
    assert on_cpu(*body.parameters(), *head.parameters(), *extra.parameters())

    # the pytorch-GAN idiom: the tensor type picked by availability
    cuda = torch.cuda.is_available()
    Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
    assert cuda and Tensor is torch.cuda.FloatTensor
    weight = Tensor([1.0, 0.5])
    labels = torch.cuda.LongTensor([0, 1, 1, 0])
    empty = Tensor(4, 2).fill_(0.0)
    assert isinstance(weight, torch.cuda.FloatTensor) and not isinstance(labels, Tensor)
    assert isinstance(labels, torch.cuda.LongTensor) and labels.dtype == torch.long
    assert on_cpu(weight, labels, empty) and weight.dtype == torch.float32
    assert torch.ones(2).type(torch.cuda.DoubleTensor).dtype == torch.float64
    assert torch.ones(2).type("torch.cuda.HalfTensor").dtype == torch.float16

    gen = torch.Generator(device="cuda").manual_seed(3)
    assert isinstance(gen, torch.Generator)
    xs = torch.randn(8, 4, 6, generator=gen, device=device)
    assert on_cpu(xs, torch.zeros(1, device=f"cuda:{rank}"), torch.ones(1, device=other))

    params = [*body.parameters(), *head.parameters(), *extra.parameters()]
    optimizer = torch.optim.Adam(params, lr=1e-2)
    for i, x in enumerate(xs):
        forms = [
            x.cuda(args.gpu),
            x.cuda(0),
            x.cuda(non_blocking=True),
            x.cuda(device=0),
            x.to(args.gpu),
            x.to(args.gpu, non_blocking=True),
            x.to(device),
            x.to("cuda:1"),
            x.to(device=f"cuda:{rank}", dtype=torch.float32),
        ]
        assert on_cpu(*forms) and all(torch.equal(f, x) for f in forms)
        y = labels.cuda(args.gpu, non_blocking=True)
        bias = torch.zeros(2, device=f"cuda:{rank}") + torch.full((2,), 0.1, device="cuda:0")
        optimizer.zero_grad()
        logits = extra(head(body(forms[i % len(forms)]))) * weight + bias
        loss = F.cross_entropy(logits, y)
        loss.backward()
        optimizer.step()
        print(f"step {i} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
