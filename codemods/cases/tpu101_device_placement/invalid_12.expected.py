import torch
import torch_xla


def main(args):
    # pick the device
    device = torch_xla.device()
    return device
