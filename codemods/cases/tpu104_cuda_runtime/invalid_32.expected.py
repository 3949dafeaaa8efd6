import torch
from torch.utils.cpp_extension import BuildExtension

# TODO(tpu-migrate): TPU202 custom C++/CUDA kernels do not run on XLA; use XLA ops or a Pallas kernel
cmd = {'build_ext': BuildExtension}
# TODO(tpu-migrate): TPU202 jiterator compiles CUDA kernels; use XLA ops or a Pallas kernel
fn = torch.cuda.jiterator._create_jit_fn('template <typename T> T f(T x) { return x; }')
# TODO(tpu-migrate): TPU201 CUDA profiler control; use xp.start_server / xp.trace from torch_xla.debug.profiler
torch.cuda.profiler.start()
# TODO(tpu-migrate): TPU201 NVTX ranges are CUDA-only; use xp.Trace from torch_xla.debug.profiler
with torch.autograd.profiler.emit_nvtx():
    y = f(x)
