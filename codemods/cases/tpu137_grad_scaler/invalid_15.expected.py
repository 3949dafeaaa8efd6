import torch


class Trainer:
    def __init__(self, model, opt):
        self.model = model
        self.opt = opt

    def fit(self, loader):
        for x in loader:
            self.backward_and_step(self.model(x).sum())

    def backward_and_step(self, loss):
        loss.backward()
        self.opt.step()
        torch.save(self.model.state_dict(), path)
