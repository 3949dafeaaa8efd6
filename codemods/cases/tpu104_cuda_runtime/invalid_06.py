import torch


def evaluate(model):
    model.eval()

    # free the training activations first
    torch.cuda.empty_cache()
    out = model(x)
    # release the cache again
    torch.cuda.empty_cache()
    return out


def teardown():
    # done: hand memory back
    torch.cuda.empty_cache()
