import torch.nn as nn


class Decoder(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.out = nn.Linear(8, 50)
        self.src = nn.Embedding(50, 8)
        self.out.weight = self.src.weight  # weight tying

    def forward(self, x):
        return self.out(self.src(x))
