import torch


def setup():
    model = Net()

    # speed up the convolutions
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = False

    return model
