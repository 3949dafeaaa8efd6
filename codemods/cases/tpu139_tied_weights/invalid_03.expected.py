import torch.nn as nn


class Decoder(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.out = nn.Linear(8, 50)
        self.src = nn.Embedding(50, 8)
        self.out.weight = self.src.weight  # weight tying

    def _apply(self, fn, *args, **kwargs):
        # an XLA device gives each parameter a new object: tie the weights again
        tied = self.out.weight is self.src.weight
        module = super()._apply(fn, *args, **kwargs)
        if tied:
            self.out.weight = self.src.weight
        return module

    def forward(self, x):
        return self.out(self.src(x))
