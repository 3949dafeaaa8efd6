"""DistributedDataParallel at world size 1, pytorch/examples imagenet/main.py style.

torch.cuda.set_device(args.gpu), init_process_group("nccl", init_method=env:// or tcp://...,
world_size=1, rank=0), model.cuda(args.gpu), DDP(device_ids=[args.gpu], output_device=args.gpu),
DistributedSampler, pinned loader, .cuda(args.gpu, non_blocking=True); --sync-bn converts the batch
norm layers and --barrier calls dist.barrier(device_ids=[args.gpu]) every epoch.
"""

import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--init-method", default="env://")
    parser.add_argument("--gpu", type=int, default=0)
    parser.add_argument("--sync-bn", action="store_true")
    parser.add_argument("--barrier", action="store_true")
    args = parser.parse_args()

    torch.cuda.set_device(args.gpu)
    dist.init_process_group(backend="nccl", init_method=args.init_method, world_size=1, rank=0)
    assert dist.get_backend() == "gloo" and dist.get_world_size() == 1

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3))
    if args.sync_bn:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
        assert isinstance(model[1], nn.SyncBatchNorm)
    model.cuda(args.gpu)
    model = DistributedDataParallel(model, device_ids=[args.gpu], output_device=args.gpu)
    criterion = nn.CrossEntropyLoss().cuda(args.gpu)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    g = torch.Generator().manual_seed(5)
    dataset = TensorDataset(
        torch.randn(64, 10, generator=g), torch.randint(0, 3, (64,), generator=g)
    )
    sampler = DistributedSampler(dataset)
    assert len(sampler) == 64  # one replica sees everything
    loader = DataLoader(dataset, batch_size=8, sampler=sampler, pin_memory=True)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        if args.barrier:
            dist.barrier(device_ids=[args.gpu])
        for images, target in loader:
            images = images.cuda(args.gpu, non_blocking=True)
            target = target.cuda(args.gpu, non_blocking=True)
            loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            reduced = loss.detach().clone()
            dist.all_reduce(reduced)
            assert torch.equal(reduced, loss.detach())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
