import os

import torch


class Runner:
    def __init__(self, net, gpu: int):
        self.gpu = gpu
        self.net = net.to(gpu)

    def step(self, batch):
        batch = batch.to(self.gpu)
        noise = torch.randn(4, device=self.gpu)
        return self.net(batch) + noise


class FromEnvironment:
    def __init__(self, net):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.net = net.to(self.local_rank)


def worker(rank, world_size):
    net = torch.nn.Linear(4, 4).to(rank)
    if rank == 0:
        print("first of", world_size)
    return net


def place(x, index):
    return x.to(index)


if __name__ == "__main__":
    place(torch.ones(2), 0)
    torch.multiprocessing.spawn(worker, args=(2,), nprocs=2)
    Runner(torch.nn.Linear(4, 4), 0).step(torch.ones(4).to(1))
