import torch.distributed as dist
from torch.utils.data.distributed import DistributedSampler
import torch_xla.runtime as xr

rank = xr.global_ordinal()
world_size = xr.world_size()
sampler = DistributedSampler(train_set, num_replicas=world_size, rank=rank, shuffle=True)
