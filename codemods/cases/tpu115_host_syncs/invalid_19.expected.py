import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


def train(model, loader, optimizer, device):
    for step, batch in enumerate(pl.MpDeviceLoader(loader, device)):
        outputs = model(**batch)
        outputs.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % 100 == 0:
            xm.add_step_closure(lambda loss, step: print(f"step {step} loss {loss.item():.4f}"), args=(outputs.loss, step))
