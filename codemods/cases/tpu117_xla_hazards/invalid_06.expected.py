import torch
import torch.nn as nn


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, input_ids):
        # TODO(tpu-migrate): TPU254 torch.arange() without device= lands on the CPU; add device=input_ids.device
        pos = torch.arange(input_ids.size(1))
        # TODO(tpu-migrate): TPU254 torch.ones() without device= lands on the CPU; add device=input_ids.device
        mask = torch.ones(input_ids.shape, dtype=torch.bool)
        # TODO(tpu-migrate): TPU254 torch.tensor() without device= lands on the CPU; add device=input_ids.device
        scale = torch.tensor(0.5)
        return self.emb(input_ids) * scale + self.bias(pos, mask)

    def bias(self, pos, mask):
        # TODO(tpu-migrate): TPU254 torch.zeros() without device= lands on the CPU; add device=<input>.device
        return torch.zeros(pos.shape[0], 4)
