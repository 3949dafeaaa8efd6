import torch
import torch_xla
import torch_xla.distributed.parallel_loader as pl

device = torch_xla.device()
device_loader = pl.MpDeviceLoader(loader, device)
for step, batch in enumerate(device_loader):
    tokens = batch[0]
    mask = torch.ones(4).to(device)
    halves = batch[1].to(device, torch.float16)
    model(tokens, mask, halves)
