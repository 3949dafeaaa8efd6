import torch
import torch_xla
from torch.utils.data import DataLoader
import torch_xla.distributed.parallel_loader as pl


def run(model, ds):
    device = torch_xla.device()
    if ds is not None:
        dataloader = DataLoader(ds, batch_size=8)
        device_loader = pl.MpDeviceLoader(dataloader, device)
        for batch in device_loader:
            inputs = {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}
            ids = tuple(t.to(device) for t in batch['ids'])
            model(**inputs)
