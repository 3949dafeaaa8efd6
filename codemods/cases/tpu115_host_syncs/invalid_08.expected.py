import torch
import torch.nn.functional as F
import torch_xla
from torch.utils.tensorboard import SummaryWriter
import torch_xla.core.xla_model as xm

writer = SummaryWriter()
for step, (x, y) in enumerate(loader):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    xm.add_step_closure(lambda loss, step: writer.add_scalar("train/loss", loss.item(), step), args=(loss, step))
    xm.add_step_closure(lambda step, loss: print(f"step {step}: {loss:.4f}"), args=(step, loss))
    torch_xla.sync()
