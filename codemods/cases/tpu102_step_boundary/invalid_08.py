import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank, model, loader):
    ddp_model = DDP(model)
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(ddp_model(x), y).backward()
        optimizer.step()
