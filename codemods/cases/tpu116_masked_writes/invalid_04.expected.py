import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.zeros(10, 4)

    def reset(self):
        self.table.masked_fill_(self.table != self.table, 0)
