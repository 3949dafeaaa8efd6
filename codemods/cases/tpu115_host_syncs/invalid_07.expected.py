import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

for x, y in loader:
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    xm.add_step_closure(print, args=(loss,))
    torch_xla.sync()
