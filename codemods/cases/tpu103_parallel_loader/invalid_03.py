import torch
import torch_xla
from torch.utils.data import DataLoader


class Trainer:
    def __init__(self, model, ds):
        self.model = model
        self.device = torch_xla.device()
        self.train_loader = DataLoader(ds, batch_size=32)

    def train_epoch(self):
        for i, (inputs, targets) in enumerate(self.train_loader):
            inputs = inputs.to(self.device, non_blocking=True)
            targets = targets.to(self.device, non_blocking=True)

            logits = self.model(inputs)
            loss = logits.sum()
