import torch


def log_memory(device):
    used = torch.cuda.memory_allocated(device)
    peak = torch.cuda.max_memory_allocated() / 2**30
    print(f"peak {torch.cuda.max_memory_allocated() / 1e9:.2f} GB")
    return used, peak
