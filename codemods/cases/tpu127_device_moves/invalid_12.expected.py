import os

import torch
import torch_xla


class Runner:
    def __init__(self, net, gpu: int):
        self.gpu = gpu
        self.net = net.to(torch_xla.device())

    def step(self, batch):
        batch = batch.to(torch_xla.device())
        noise = torch.randn(4, device=torch_xla.device())
        return self.net(batch) + noise


class FromEnvironment:
    def __init__(self, net):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.net = net.to(torch_xla.device())


def worker(rank, world_size):
    net = torch.nn.Linear(4, 4).to(torch_xla.device())
    if rank == 0:
        print("first of", world_size)
    return net


def place(x, index):
    return x.to(torch_xla.device())


if __name__ == "__main__":
    place(torch.ones(2), 0)
    torch.multiprocessing.spawn(worker, args=(2,), nprocs=2)
    Runner(torch.nn.Linear(4, 4), 0).step(torch.ones(4).to(torch_xla.device()))
