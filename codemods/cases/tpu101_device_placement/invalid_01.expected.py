import torch
import torch_xla

a = torch_xla.device()
b = torch_xla.device()
c = torch_xla.device()
d = torch_xla.device()
e = torch_xla.device()
f = torch_xla.device()
g = torch_xla.device()
h = torch.device("cpu")
