import torch
import torch_xla

device = torch_xla.device()
x = torch.zeros(3, device=device)
model = Net().to(device)
batch = batch.to(device)
ema = ema.to(device)
