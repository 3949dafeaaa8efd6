import torch

device = torch.device('cuda')
x = torch.zeros(3, device=device)
model = Net().to(device)
batch = batch.to(device)
ema = ema.to(device)
