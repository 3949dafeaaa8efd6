import torch
import torch_xla
from torch.utils.data import DataLoader
import torch_xla.distributed.parallel_loader as pl


class Runner:
    def fit(self, ds, epochs):
        self.loader = DataLoader(ds, batch_size=16)
        device = torch_xla.device()
        device_loader = pl.MpDeviceLoader(self.loader, device)
        for epoch in range(epochs):
            for x, y in device_loader:
                self.model(x, y)
