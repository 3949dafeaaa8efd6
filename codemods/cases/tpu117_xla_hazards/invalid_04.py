import torch
import torch.nn as nn


class Solver(nn.Module):
    def forward(self, x):
        assert (x > 0).all()
        t = torch.ones(3, device=x.device)
        while t.sum() > 0:
            t = t - 1
        return x if x.mean() > 0 else -x
