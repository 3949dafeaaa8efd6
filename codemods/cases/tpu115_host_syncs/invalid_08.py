import torch
import torch.nn.functional as F
import torch_xla
from torch.utils.tensorboard import SummaryWriter

writer = SummaryWriter()
for step, (x, y) in enumerate(loader):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    torch_xla.sync()
    writer.add_scalar("train/loss", loss.item(), step)
    print(f"step {step}: {loss:.4f}")
