import torch
import torch_xla


def setup():
    pass


def move(x, rank):
    torch.set_default_device(torch_xla.device())
    return x.to(
        torch_xla.device(),
    )
