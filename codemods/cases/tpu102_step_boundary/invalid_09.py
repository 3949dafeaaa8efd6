import torch
import torch_xla
import torch_xla.distributed.parallel_loader as pl


def train_loop(model, train_loader, optimizer, device):
    for x, y in pl.MpDeviceLoader(train_loader, device):
        optimizer.zero_grad()
        loss = model(x, y)
        loss.backward()
        optimizer.step()


def fit(model, device_loader, optimizer):
    for x, y in device_loader:
        model(x, y).backward()
        optimizer.step()


fit(model, pl.MpDeviceLoader(loader, torch_xla.device()), optimizer)
