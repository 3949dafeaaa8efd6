from torch.distributed import init_process_group
import torch_xla.distributed.xla_backend

def setup(rank, world_size):
    init_process_group("xla", init_method="xla://")
