import torch


def cuda(tensor):
    return tensor.cuda() if torch.cuda.is_available() else tensor


x = cuda(torch.ones(2))
