import torch

# TODO(tpu-migrate): TPU201 no device properties on XLA; xm.xla_device_kind(device) names the chip
props = torch.cuda.get_device_properties(0)
# TODO(tpu-migrate): TPU201 no CUDA memory report on XLA; use xm.get_memory_info(device)
free, total = torch.cuda.mem_get_info()
# TODO(tpu-migrate): TPU201 use xm.get_rng_state() / xm.set_rng_state() for the XLA generator
state = torch.cuda.get_rng_state()
