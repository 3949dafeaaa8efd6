import torch
import torch.nn as nn


class Pos(nn.Module):
    def forward(self, x):
        pos = torch.arange(x.size(1), device=x.device)
        zeros = torch.zeros(x.shape, dtype=x.dtype, device=x.device)
        ones = torch.ones_like(x)
        bias = x.new_zeros(3)
        steps = torch.arange(4).to(x.device)
        if x.dim() == 3 and self.training:
            x = x + 1
        return x + pos + zeros + ones + bias.sum() + steps.sum()
