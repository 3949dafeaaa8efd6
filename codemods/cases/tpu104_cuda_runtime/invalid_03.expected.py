import torch


def cleanup(model):
    del model
    return torch.zeros(1)
