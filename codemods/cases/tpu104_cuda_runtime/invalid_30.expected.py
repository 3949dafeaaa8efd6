import atexit

import torch

# TODO(tpu-migrate): TPU201 CUDA-only API with no XLA equivalent; drop this use
atexit.register(torch.cuda.empty_cache)
# TODO(tpu-migrate): TPU201 XLA reports out-of-memory as RuntimeError (RESOURCE_EXHAUSTED)
try:
    y = model(x)
except torch.cuda.OutOfMemoryError:
    y = None
