# TODO(tpu-migrate): TPU202 Triton kernels do not run on TPU; use XLA ops or a Pallas kernel
import triton
# TODO(tpu-migrate): TPU202 Triton kernels do not run on TPU; use XLA ops or a Pallas kernel
import triton.language as tl


# TODO(tpu-migrate): TPU202 Triton kernels do not run on TPU; use XLA ops or a Pallas kernel
@triton.jit
def add_kernel(x_ptr, n: tl.constexpr):
    pid = tl.program_id(0)
