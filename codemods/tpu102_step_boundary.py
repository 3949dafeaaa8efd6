# TEMPORARY scaffold, replaced by the real rule in this session.
from ._base import Safety, TpuCodemod


class StepBoundary(TpuCodemod):
    """What it does\n    Why\n    Example"""
    CODE = "TPU102"
    NAME = "tpu102_step_boundary"
    SUMMARY = "scaffold"
    SAFETY = Safety.SAFE
    TRIGGERS = ("\x00never",)
