import torch.distributed as dist
from torch.utils.data.distributed import DistributedSampler

rank = dist.get_rank()
world_size = dist.get_world_size()
sampler = DistributedSampler(train_set, num_replicas=world_size, rank=rank, shuffle=True)
