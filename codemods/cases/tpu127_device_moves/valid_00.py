import torch


class Device:
    def __init__(self, name):
        self.name = name

    def cuda(self):
        return Device('cuda')


dev = Device('cpu').cuda()
x = torch.ones(2).to(dev.name)
