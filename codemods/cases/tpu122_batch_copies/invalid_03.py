import torch
import torch_xla
from torch.utils.data import DataLoader
import torch_xla.distributed.parallel_loader as pl


class Trainer:
    def __init__(self, model, ds):
        self.model = model
        self.device = torch_xla.device()
        self.train_loader = DataLoader(ds, batch_size=32)

    def train_epoch(self):
        for i, (inputs, targets) in enumerate(pl.MpDeviceLoader(self.train_loader, self.device)):
            inputs = inputs.to(self.device)
            targets = targets.to(self.device)

            logits = self.model(inputs)
            loss = logits.sum()
