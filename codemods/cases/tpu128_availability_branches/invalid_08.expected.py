import os

import torch


def resolve_device(name=os.environ.get("DEVICE", "auto")):
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


def get_device():
    return torch.device("cuda")
