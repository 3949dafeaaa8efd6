import torch

# TODO(tpu-migrate): TPU201 a CUDA device index has no meaning on XLA; use torch_xla.device()
idx = torch.cuda.current_device()
# TODO(tpu-migrate): TPU201 no reserved-memory stat on XLA; xm.get_memory_info(device) has bytes_*
r = torch.cuda.memory_reserved()
