"""Correct torch_xla 2.9 migration of spawn_cuda.py: torch_xla.launch, xm.optimizer_step reduces gradients."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def dataset():
    g = torch.Generator().manual_seed(5)
    return TensorDataset(torch.randn(64, 10, generator=g), torch.randint(0, 3, (64,), generator=g))


def _mp_fn(index):
    device = torch_xla.device()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sampler = DistributedSampler(
        dataset(), num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=False
    )
    loader = pl.MpDeviceLoader(
        DataLoader(sampler.dataset, batch_size=8, sampler=sampler, drop_last=True), device
    )
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            xm.optimizer_step(optimizer)


if __name__ == "__main__":
    torch_xla.launch(_mp_fn, args=())
