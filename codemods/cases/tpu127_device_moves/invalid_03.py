import torch

device = torch.device('cuda')
x = torch.zeros(3, device='cuda')
model = Net().cuda()
batch = batch.cuda(non_blocking=True)
ema = ema.cuda(device=0)
