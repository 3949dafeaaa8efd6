import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, n: tl.constexpr):
    pid = tl.program_id(0)
