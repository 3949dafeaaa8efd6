import torch
import torch_xla.core.xla_model as xm


def log_memory(device):
    used = xm.get_memory_info(device)["bytes_used"]
    peak = xm.get_memory_info(device)["peak_bytes_used"] / 2**30
    print(f"peak {xm.get_memory_info(device)['peak_bytes_used'] / 1e9:.2f} GB")
    return used, peak
