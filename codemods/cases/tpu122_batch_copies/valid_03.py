import torch
import torch_xla
from torch.utils.data import DataLoader
import torch_xla.distributed.parallel_loader as pl


def evaluate(model, ds):
    correct = 0
    for images, labels in pl.MpDeviceLoader(DataLoader(ds, batch_size=100), torch_xla.device()):
        images = images.to('cpu')
        correct += (model(images.to(torch_xla.device())) == labels).sum()
    return correct
