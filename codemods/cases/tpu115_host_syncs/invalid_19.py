import torch
import torch_xla.distributed.parallel_loader as pl


def train(model, loader, optimizer, device):
    for step, batch in enumerate(pl.MpDeviceLoader(loader, device)):
        outputs = model(**batch)
        outputs.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % 100 == 0:
            print(f"step {step} loss {outputs.loss.item():.4f}")
