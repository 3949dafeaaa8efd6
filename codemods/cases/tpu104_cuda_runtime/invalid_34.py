import torch

idx = torch.cuda.current_device()
r = torch.cuda.memory_reserved()
