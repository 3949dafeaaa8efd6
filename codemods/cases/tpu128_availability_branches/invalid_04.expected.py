import torch

# pick the device
device = torch.device("cuda")
model = Net().to(device)
