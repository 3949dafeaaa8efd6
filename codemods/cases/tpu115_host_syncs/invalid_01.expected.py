import torch
import torch_xla
import torch_xla.core.xla_model as xm


def train(model, loader, optimizer, log_interval):
    for i, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        if i % log_interval == 0:
            xm.add_step_closure(lambda i, loss: print("step", i, "loss", loss.item()), args=(i, loss))
        torch_xla.sync()
