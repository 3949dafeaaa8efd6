import torch.nn as nn


class RNNModel(nn.Module):
    def __init__(self, ntoken, nhid, tie_weights=False):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, nhid)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight

    def _apply(self, fn, *args, **kwargs):
        # an XLA device gives each parameter a new object: tie the weights again
        tied = self.decoder.weight is self.encoder.weight
        module = super()._apply(fn, *args, **kwargs)
        if tied:
            self.decoder.weight = self.encoder.weight
        return module


model = RNNModel(100, 16, tie_weights=args.tied).to(device)
