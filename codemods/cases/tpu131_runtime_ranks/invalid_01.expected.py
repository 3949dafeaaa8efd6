import torch_xla.runtime as xr

rank = xr.global_ordinal()
local_rank = xr.local_ordinal()
world_size = xr.world_size()
