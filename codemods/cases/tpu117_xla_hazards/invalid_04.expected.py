import torch
import torch.nn as nn


class Solver(nn.Module):
    def forward(self, x):
        # TODO(tpu-migrate): TPU252 Python assert on a tensor value syncs with the host every step
        assert (x > 0).all()
        t = torch.ones(3, device=x.device)
        # TODO(tpu-migrate): TPU252 Python while on a tensor value syncs with the host every step
        while t.sum() > 0:
            t = t - 1
        # TODO(tpu-migrate): TPU252 Python if-else on a tensor value syncs with the host every step
        return x if x.mean() > 0 else -x
