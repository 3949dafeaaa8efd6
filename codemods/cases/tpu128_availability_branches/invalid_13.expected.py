import torch


def main(seed):
    model = Net()
    return model
