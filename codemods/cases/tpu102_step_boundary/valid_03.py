import torch
import torch_xla
import torch_xla.core.xla_model as xm

for epoch in range(3):
    sampler.set_epoch(epoch)
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        xm.optimizer_step(optimizer)
        torch_xla.sync()
    scheduler.step()
    lr_scheduler.step()
