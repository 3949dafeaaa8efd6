import torch.nn as nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = nn.Linear(8, 50)
        self.src = nn.Embedding(50, 8)
        # TODO(tpu-migrate): TPU255 moving the model to the XLA device unties these weights; re-tie after .to(device)
        self.out.weight = self.src.weight

    def _apply(self, fn, *args, **kwargs):
        return super()._apply(fn, *args, **kwargs)
