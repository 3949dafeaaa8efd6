import torch


def cleanup(model):
    del model
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.reset_max_memory_allocated()
    torch.cuda.ipc_collect()
    torch.cuda.init()
    return torch.zeros(1)
