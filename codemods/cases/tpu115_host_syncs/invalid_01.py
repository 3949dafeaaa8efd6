import torch
import torch_xla


def train(model, loader, optimizer, log_interval):
    for i, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        if i % log_interval == 0:
            print("step", i, "loss", loss.item())
