import torch
import torch.nn as nn


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10)
        self.head.weight = self.embed.weight


model = LM()
model.to(device)
model.head.weight = model.embed.weight
half = model.to(torch.bfloat16)
