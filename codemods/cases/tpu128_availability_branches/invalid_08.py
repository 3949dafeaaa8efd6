import os
import warnings

import torch


def resolve_device(name=os.environ.get("DEVICE", "auto")):
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


def get_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    warnings.warn("no GPU, falling back to the CPU")
    return torch.device("cpu")
