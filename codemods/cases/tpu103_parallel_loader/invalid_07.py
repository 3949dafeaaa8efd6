import torch
import torch_xla
from torch.utils.data import DataLoader


class Runner:
    def fit(self, ds, epochs):
        self.loader = DataLoader(ds, batch_size=16)
        device = torch_xla.device()
        for epoch in range(epochs):
            for x, y in self.loader:
                self.model(x.to(device), y.to(device))
