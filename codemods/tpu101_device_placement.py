# TEMPORARY scaffold, replaced by the real rule in this session.
from ._base import Safety, TpuCodemod


class DevicePlacement(TpuCodemod):
    """What it does\n    Why\n    Example"""
    CODE = "TPU101"
    NAME = "tpu101_device_placement"
    SUMMARY = "scaffold"
    SAFETY = Safety.SAFE
    TRIGGERS = ("\x00never",)
