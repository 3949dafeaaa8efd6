import torch


def setup():
    model = Net()

    return model
