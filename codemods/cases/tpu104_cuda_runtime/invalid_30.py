import atexit

import torch

atexit.register(torch.cuda.empty_cache)
try:
    y = model(x)
except torch.cuda.OutOfMemoryError:
    y = None
