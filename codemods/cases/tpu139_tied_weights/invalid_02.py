import torch.nn as nn


class TiedLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(50, 8)
        self.lm_head = nn.Linear(8, 50, bias=False)
        self.tie_weights()

    def tie_weights(self):
        self.lm_head.weight = self.wte.weight


model = TiedLM()
model = model.to(device)
