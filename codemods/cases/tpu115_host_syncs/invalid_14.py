import torch
import torch_xla.core.xla_model as xm

step = 0
while step < 100:
    loss = model(next(batches))
    loss.backward()
    optimizer.step()
    print("loss", loss.item())
    step += 1
    xm.mark_step()
