import torch
import torch.nn as nn

PAD = 0
NEG = -1e9


class Attn(nn.Module):
    def forward(self, tokens, scores):
        pad = tokens == PAD
        scores = scores * 0.5
        tokens.masked_fill_(pad, NEG)
        keep = ~(scores > 10) & (scores != 0)
        scores.masked_fill_(keep, -1)
        scores.masked_fill_(~keep, 0.0)
        return scores
