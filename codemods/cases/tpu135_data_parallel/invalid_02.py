import torch
from torch import nn

model = nn.DataParallel(Net(), device_ids=[0, 1]).to(device)


def resume(path):
    model.load_state_dict(torch.load(path))


def main(path):
    net = nn.DataParallel(Net()).cuda()
    if path:
        net.load_state_dict(torch.load(path), strict=True)
    return net
