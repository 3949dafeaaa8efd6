from torch.distributed import init_process_group

def setup(rank, world_size):
    backend = "nccl"
    init_process_group(
        backend=backend,
        init_method="tcp://127.0.0.1:23456",
        world_size=world_size,
        rank=rank,
    )
