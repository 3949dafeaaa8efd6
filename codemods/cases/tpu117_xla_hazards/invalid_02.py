import torch
import torch.nn as nn


class Head(nn.Module):
    def forward(self, x, labels):
        idx = torch.nonzero(labels)
        uniq = labels.unique()
        picked = x[labels > 0]
        sel = torch.masked_select(x, x > 0)
        pos = torch.where(labels)
        return idx, uniq, picked, sel, pos
