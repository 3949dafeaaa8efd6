import torch

# I/O
device = 'cuda'  # examples: 'cpu', 'cuda', 'cuda:0', 'cuda:1' etc., or try 'mps'
if ddp:
    device = f'cuda:{ddp_local_rank}'
device_type = 'cuda' if 'cuda' in device else 'cpu'
if device_type == 'cuda':
    x = x.pin_memory().to(device, non_blocking=True)
