import torch
import torch.nn as nn


class LM(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, x):
        return self.head(self.embed(x))


def main(device):
    model = LM(100, 16)
    model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    other = LM(100, 16).to(device)
    return model, other, opt
