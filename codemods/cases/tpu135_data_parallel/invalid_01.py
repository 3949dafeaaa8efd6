import torch
import torch.nn as nn

net = Net()
net = net.to(device)
if device == 'cuda':
    net = nn.DataParallel(net)

if args.resume:
    # Load checkpoint.
    checkpoint = torch.load('./checkpoint/ckpt.pth')
    net.load_state_dict(checkpoint['net'])
    start_epoch = checkpoint['epoch']
