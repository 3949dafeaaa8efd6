import pytorch_lightning as pl
import torch
import torch_xla
from torch_xla.distributed.parallel_loader import MpDeviceLoader


def evaluate(model, val_loader, device):
    for x, y in MpDeviceLoader(val_loader, device):
        model(x, y)


evaluate(model, val_loader, torch_xla.device())
