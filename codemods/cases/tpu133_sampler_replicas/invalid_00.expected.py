import torch.distributed as dist
from torch.utils.data.distributed import DistributedSampler
import torch_xla.runtime as xr

rank = xr.global_ordinal()
world_size = xr.world_size()
sampler = DistributedSampler(
    train_set, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True
)
