import torch
import torch_xla
from torch.utils.data import DataLoader


class Trainer:
    def __init__(self, model, train_ds):
        self.device = torch_xla.device()
        self.model = model.to(self.device)
        self.train_loader = DataLoader(train_ds, batch_size=16)

    def train_epoch(self):
        for inputs, labels in self.train_loader:
            inputs, labels = inputs.to(self.device), labels.to(self.device)
            self.step(inputs, labels)
