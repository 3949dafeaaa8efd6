import torch

# TODO(tpu-migrate): TPU201 CUDA graphs have no XLA equivalent; torch_xla.compile caches graphs
g = torch.cuda.CUDAGraph()
# TODO(tpu-migrate): TPU201 CUDA graphs have no XLA equivalent; torch_xla.compile caches graphs
with torch.cuda.graph(g):
    y = f(x)
# TODO(tpu-migrate): TPU201 NVTX ranges are CUDA-only; use xp.Trace from torch_xla.debug.profiler
torch.cuda.nvtx.range_push('fwd')
# TODO(tpu-migrate): TPU201 no CUDA memory report on XLA; use xm.get_memory_info(device)
stats = torch.cuda.memory_summary()
