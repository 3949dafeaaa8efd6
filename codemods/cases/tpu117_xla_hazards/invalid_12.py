import torch
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x):
        if x.dim() == 2:
            y = x
        elif x.sum() > 0:
            y = -x
        else:
            y = x
        return y
