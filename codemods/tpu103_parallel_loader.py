# TEMPORARY scaffold, replaced by the real rule in this session.
from ._base import Safety, TpuCodemod


class ParallelLoader(TpuCodemod):
    """What it does\n    Why\n    Example"""
    CODE = "TPU103"
    NAME = "tpu103_parallel_loader"
    SUMMARY = "scaffold"
    SAFETY = Safety.SAFE
    TRIGGERS = ("\x00never",)
