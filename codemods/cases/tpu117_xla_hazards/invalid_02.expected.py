import torch
import torch.nn as nn


class Head(nn.Module):
    def forward(self, x, labels):
        # TODO(tpu-migrate): TPU251 torch.nonzero has a data-dependent shape: XLA recompiles for each new count
        idx = torch.nonzero(labels)
        # TODO(tpu-migrate): TPU251 .unique() has a data-dependent shape: XLA recompiles for each new count
        uniq = labels.unique()
        # TODO(tpu-migrate): TPU251 boolean-mask indexing has a data-dependent shape; use torch.where / masked_fill
        picked = x[labels > 0]
        # TODO(tpu-migrate): TPU251 torch.masked_select has a data-dependent shape: XLA recompiles for each new count
        sel = torch.masked_select(x, x > 0)
        # TODO(tpu-migrate): TPU251 torch.where(cond) has a data-dependent shape: XLA recompiles for each new count
        pos = torch.where(labels)
        return idx, uniq, picked, sel, pos
