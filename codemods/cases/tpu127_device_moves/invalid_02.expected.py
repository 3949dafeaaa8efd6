import torch
import torch_xla

x = torch.zeros(3, device=torch_xla.device())
y = torch.randn(2, 2, device=torch_xla.device()).to(torch_xla.device())
z = w.to(device=torch_xla.device(), dtype=torch.float16)
v = w.to(torch_xla.device(), torch.bfloat16)
