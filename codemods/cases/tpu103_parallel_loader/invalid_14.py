import pytorch_lightning as pl
import torch
import torch_xla


def evaluate(model, val_loader, device):
    for x, y in val_loader:
        model(x.to(device), y.to(device))


evaluate(model, val_loader, torch_xla.device())
