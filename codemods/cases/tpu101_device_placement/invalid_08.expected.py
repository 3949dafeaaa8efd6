import os

import torch
import torch_xla


def resolve_device(name=os.environ.get("DEVICE", "auto")):
    if name == "auto":
        return torch_xla.device()
    return name


def get_device():
    return torch_xla.device()
