"""Tiny DCGAN-style loop that draws its noise on the accelerator each step (pytorch/examples dcgan):
torch.randn(..., device=device), torch.rand(..., device=device) for soft labels and randn_like on
a device tensor (VAE-style reparameterisation)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

NZ = 8


def make_nets():
    net_g = nn.Sequential(nn.Flatten(), nn.Linear(NZ, 32), nn.ReLU(), nn.Linear(32, 2 * 12))
    net_d = nn.Sequential(nn.Linear(12, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
    return net_g, net_d


def generate(net_g, noise):
    mu, log_std = net_g(noise).chunk(2, dim=1)
    std = log_std.mul(0.5).exp()
    return mu + torch.randn_like(std) * std


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    net_g, net_d = make_nets()
    net_g, net_d = net_g.to(device), net_d.to(device)
    opt_d = torch.optim.Adam(net_d.parameters(), lr=1e-2)
    opt_g = torch.optim.Adam(net_g.parameters(), lr=1e-2)
    data = torch.randn(16, 12, generator=torch.Generator().manual_seed(5)).to(device)
    for step in range(20):
        noise = torch.randn(16, NZ, 1, 1, device=device)
        fake = generate(net_g, noise)
        real_label = 0.9 + 0.1 * torch.rand(16, 1, device=device)
        opt_d.zero_grad()
        loss_d = F.binary_cross_entropy_with_logits(
            net_d(data), real_label
        ) + F.binary_cross_entropy_with_logits(
            net_d(fake.detach()), torch.zeros(16, 1, device=device)
        )
        loss_d.backward()
        opt_d.step()
        opt_g.zero_grad()
        loss_g = F.binary_cross_entropy_with_logits(net_d(fake), torch.ones(16, 1, device=device))
        loss_g.backward()
        opt_g.step()


if __name__ == "__main__":
    main()
