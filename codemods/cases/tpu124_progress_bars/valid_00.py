import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


def _log(step, loss):
    print(f"step {step} loss {loss.item():.4f}")


def train(model, loader, optimizer, device):
    total = 0.0
    for step, (x, y) in enumerate(pl.MpDeviceLoader(loader, device)):
        loss = model(x, y)
        loss.backward()
        xm.optimizer_step(optimizer)
        total += loss.detach()
        if step % 10 == 0:
            xm.add_step_closure(_log, args=(step, loss))
    print(f"mean loss {total.item() / (step + 1):.4f}")
