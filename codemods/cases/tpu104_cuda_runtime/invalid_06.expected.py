import torch


def evaluate(model):
    model.eval()

    # free the training activations first
    out = model(x)
    return out


def teardown():
    pass
