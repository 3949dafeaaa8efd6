import torch
import torch_xla
import torch_xla.core.xla_model as xm


def step_fn(x, y):
    optimizer.zero_grad()
    loss = model(x, y)
    loss.backward()
    xm.optimizer_step(optimizer)
    return loss


compiled_step = torch_xla.compile(step_fn, full_graph=True)
for x, y in loader:
    compiled_step(x, y)
