import torch
import torch_xla
from torch.utils.data import DataLoader


def evaluate(model, ds):
    correct = 0
    for images, labels in DataLoader(ds, batch_size=100):
        images = images.to('cpu')
        correct += (model(images.to(torch_xla.device())) == labels).sum()
    return correct
