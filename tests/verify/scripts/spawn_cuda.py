"""One process per GPU with mp.spawn, NCCL and DistributedDataParallel (pytorch/examples imagenet style)."""

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def dataset():
    g = torch.Generator().manual_seed(5)
    return TensorDataset(torch.randn(64, 10, generator=g), torch.randint(0, 3, (64,), generator=g))


def main_worker(gpu, ngpus_per_node):
    dist.init_process_group("nccl", init_method="env://", world_size=ngpus_per_node, rank=gpu)
    torch.cuda.set_device(gpu)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3)).cuda(gpu)
    model = DistributedDataParallel(model, device_ids=[gpu])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sampler = DistributedSampler(dataset(), shuffle=False)
    loader = DataLoader(sampler.dataset, batch_size=8, sampler=sampler, pin_memory=True)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.cuda(gpu, non_blocking=True), y.cuda(gpu, non_blocking=True)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    ngpus_per_node = torch.cuda.device_count()
    mp.spawn(main_worker, nprocs=ngpus_per_node, args=(ngpus_per_node,))
