import torch
import torch_xla

# pick the device
device = torch_xla.device()
model = Net().to(device)
