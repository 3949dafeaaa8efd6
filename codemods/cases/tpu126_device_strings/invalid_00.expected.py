import torch
import torch_xla

# I/O
device = 'xla'  # examples: 'cpu', 'cuda', 'cuda:0', 'cuda:1' etc., or try 'mps'
if ddp:
    device = 'xla'
device_type = 'xla' if 'xla' in device else 'cpu'
if device_type == 'xla':
    x = x.pin_memory().to(device, non_blocking=True)
