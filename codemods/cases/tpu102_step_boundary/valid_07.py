import torch
import torch_xla.core.xla_model as xm
import torch_xla.debug.profiler as xp

for x, y in loader:
    with xp.StepTrace('train'):
        model(x, y).backward()
        xm.optimizer_step(optimizer)

for x, y in loader:
    model(x, y).backward()
    xm.optimizer_step(optimizer, barrier=True)
