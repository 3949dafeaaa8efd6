import torch
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x):
        if x.dim() == 2:
            y = x
        # TODO(tpu-migrate): TPU252 Python if on a tensor value syncs with the host every step
        elif x.sum() > 0:
            y = -x
        else:
            y = x
        return y
