# TEMPORARY scaffold, replaced by the real rule in this session.
from ._base import Safety, TpuCodemod


class CudaRuntimeCalls(TpuCodemod):
    """What it does\n    Why\n    Example"""
    CODE = "TPU104"
    NAME = "tpu104_cuda_runtime"
    SUMMARY = "scaffold"
    SAFETY = Safety.SAFE
    TRIGGERS = ("\x00never",)
