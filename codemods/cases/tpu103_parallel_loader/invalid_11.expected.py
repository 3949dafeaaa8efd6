import torch
import torch_xla
import torch_xla.distributed.parallel_loader as pl

device = torch_xla.device()


def fit(model, opt, dl, epochs):
    for _ in range(epochs):
        for xb, yb in pl.MpDeviceLoader(dl, device):
            xb, yb = xb.to(device), yb.to(device)
            loss = model(xb, yb)


fit(model, opt, torch.utils.data.DataLoader(ds, batch_size=4), 3)
