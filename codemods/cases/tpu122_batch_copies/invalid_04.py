import torch
import torch_xla
from tqdm import tqdm
import torch_xla.distributed.parallel_loader as pl

device = torch_xla.device()


def evaluate(model, val_loader):
    model.eval()
    with torch.no_grad():
        val_device_loader = pl.MpDeviceLoader(val_loader, device)
        for batch in tqdm(val_device_loader, total=len(val_loader), desc='eval'):
            inputs = batch['x'].to(device)
            labels = batch['y'].to(device).long()
            scores = model(inputs, mask=batch['mask'].to(device))
