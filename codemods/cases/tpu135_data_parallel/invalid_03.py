import torch


def pretrained(net, path):
    net.load_state_dict(torch.load(path))
    return net


def build(path):
    net = torch.nn.DataParallel(Net())
    ema.load_state_dict(torch.load(path))
    return pretrained(net, path)


class Trainer:
    def __init__(self, path):
        self.model = torch.nn.DataParallel(self.model)
        self.model.load_state_dict(torch.load(path))


backbone.load_state_dict(torch.load(path))
backbone = torch.nn.DataParallel(backbone)
backbone.train()
