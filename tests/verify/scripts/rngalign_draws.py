"""Draws with the random APIs on the accelerator and saves them: `rngalign_draws.py OUT [--xla]`.

Run as the original (CUDA, mapped to the CPU) and as the migrated script (--xla, on XLA:CPU): with
the CPU generator aligned, both must save the same values, bit for bit.
"""

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def draws(d):
    out = {}
    out["randn"] = torch.randn(4, 5, device=d)
    out["rand f64"] = torch.rand(3, 7, device=d, dtype=torch.float64)
    out["randint"] = torch.randint(0, 10, (20,), device=d)
    out["randint high"] = torch.randint(5, (3, 3), device=d)
    out["randperm"] = torch.randperm(17, device=d)
    out["normal size"] = torch.normal(0.0, 2.0, size=(6,), device=d)
    leaf = torch.randn(3, device=d, requires_grad=True)
    out["requires_grad leaf"] = torch.tensor([leaf.requires_grad, leaf.is_leaf])
    out["leaf"] = leaf.detach()
    base = torch.ones(8, 9, device=d)
    out["randn_like"] = torch.randn_like(base)
    out["rand_like"] = torch.rand_like(base)
    out["randint_like"] = torch.randint_like(base, 3, 9)
    out["uniform_"] = torch.empty(5, 6, device=d).uniform_(-1, 1)
    out["normal_"] = torch.empty(5, 6, device=d).normal_(2, 3)
    out["bernoulli_ p"] = torch.empty(5, 6, device=d).bernoulli_(0.3)
    out["random_"] = torch.empty(5, 6, dtype=torch.int64, device=d).random_(0, 100)
    out["exponential_"] = torch.empty(40, device=d).exponential_()
    out["geometric_"] = torch.empty(40, device=d).geometric_(0.3)
    out["cauchy_"] = torch.empty(40, device=d).cauchy_()
    out["log_normal_"] = torch.empty(40, device=d).log_normal_()
    p = torch.linspace(0, 1, 2000, device=d).reshape(50, 40)
    out["bernoulli(p)"] = torch.bernoulli(p)
    out["p.bernoulli()"] = p.bernoulli()
    out["bernoulli(p) f64"] = torch.bernoulli(p.double())
    out["bernoulli(x, 0.7)"] = torch.bernoulli(p, 0.7)
    out["bernoulli_(p)"] = torch.empty(50, 40, device=d).bernoulli_(p)
    probs = torch.softmax(torch.arange(60.0, device=d).reshape(3, 20) / 7, -1)
    out["multinomial 1"] = torch.multinomial(probs, 1)
    out["multinomial 5"] = torch.multinomial(probs, 5)
    out["multinomial repl"] = torch.multinomial(probs, 9, replacement=True)
    out["probs.multinomial"] = probs[0].multinomial(2)
    mean = torch.arange(12.0, device=d).reshape(3, 4)
    std = torch.linspace(0.1, 2, 12, device=d).reshape(3, 4)
    out["normal(t, t)"] = torch.normal(mean, std)
    out["normal(t, f)"] = torch.normal(mean, 0.5)
    out["normal(f, t)"] = torch.normal(1.5, std)
    out["generator"] = torch.randn(5, device=d, generator=torch.Generator().manual_seed(7))
    out["Linear init"] = nn.Linear(6, 4, device=d).weight.detach()
    out["init.normal_"] = nn.init.normal_(torch.empty(3, 3, device=d))
    out["xavier_uniform_"] = nn.init.xavier_uniform_(torch.empty(3, 3, device=d))
    out["Normal.sample"] = torch.distributions.Normal(mean, std).sample()
    out["Normal.rsample"] = torch.distributions.Normal(mean, std).rsample()
    x = torch.linspace(-2, 2, 640).reshape(10, 64).to(d)  # XLA linspace rounds differently
    out["dropout"] = F.dropout(x, 0.3)
    out["Dropout inplace"] = nn.Dropout(0.4, inplace=True)(x.clone())
    out["dropout2d"] = F.dropout2d(x.reshape(2, 5, 8, 8), 0.5)
    out["alpha_dropout"] = F.alpha_dropout(x, 0.2, training=True)
    out["cpu draw after"] = torch.randn(3)
    return out


def main():
    path, on_xla = sys.argv[1], "--xla" in sys.argv
    if on_xla:
        import torch_xla

        device = torch_xla.device()
    else:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(3)
    values = {name: value.to("cpu") for name, value in draws(device).items()}
    values["rng state"] = torch.get_rng_state()
    torch.save(values, path)
    torch.poisson(torch.ones(3, device=device))  # no CPU equivalent on XLA: counted as not aligned


if __name__ == "__main__":
    main()
