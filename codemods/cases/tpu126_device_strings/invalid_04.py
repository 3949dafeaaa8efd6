import torch


class Worker:
    def __init__(self, rank):
        self.device = "cuda"
        self.weights = torch.ones(2).to(self.device)

    def run(self, x):
        if self.device == 'cuda':
            x = x.to(self.device)
        return x
