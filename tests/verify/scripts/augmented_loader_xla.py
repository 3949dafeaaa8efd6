"""Correct torch_xla 2.9 port of augmented_loader_cuda.py: the loader wrapped in pl.MpDeviceLoader."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader, Dataset


class Augmented(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        state = torch.get_rng_state()
        torch.manual_seed(index)
        sample = torch.randn(12)
        torch.set_rng_state(state)
        return sample + 0.1 * torch.randn(12), index % 2


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    loader = pl.MpDeviceLoader(
        DataLoader(Augmented(), batch_size=4, shuffle=True, drop_last=True), device
    )
    model = nn.Sequential(nn.Linear(12, 16), nn.Tanh(), nn.Linear(16, 2)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        noise = 0.05 * torch.randn(x.shape, device=device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x + noise), y)
        loss.backward()
        xm.optimizer_step(optimizer)


if __name__ == "__main__":
    main()
