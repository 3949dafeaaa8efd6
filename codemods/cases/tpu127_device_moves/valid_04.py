import torch


def cast(x, kind):
    return x.to(kind)


def shifted(x, steps):
    for i in range(steps):
        x = x.to(i)  # (a loop variable: not followed)
    return x


class Holder:
    def __init__(self, target):
        self.target = target
        self.target += 1

    def move(self, x):
        return x.to(self.target)


cast(torch.ones(2), torch.float16)
cast(torch.ones(2), 0)
