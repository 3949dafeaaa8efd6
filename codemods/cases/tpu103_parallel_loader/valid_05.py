import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


def train_loop_fn(loader):
    for data, target in loader:
        model(data, target)


device = xm.xla_device()
para_loader = pl.ParallelLoader(train_loader, [device])
train_loop_fn(para_loader.per_device_loader(device))
