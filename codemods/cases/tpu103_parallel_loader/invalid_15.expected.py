import torch
from tqdm import tqdm
import torch_xla.distributed.parallel_loader as pl


class Evaluator:
    def __init__(self, model, device):
        self.model = model
        self.device = device

    def run(self):
        val_device_loader = pl.MpDeviceLoader(self.val_loader, self.device) if self.device.type == "xla" else self.val_loader
        for batch in tqdm(val_device_loader):
            self.model(batch.to(self.device))
