import torch


class Trainer:
    def __init__(self, model):
        self.model = model.cuda()
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.buffer = torch.zeros(4, device='cuda')

    def step(self, batch):
        x = batch.cuda(non_blocking=True)
        return self.model(x)
