import torch


class Trainer:
    def __init__(self, model, opt):
        self.opt = opt

    def step(self, loss):
        loss.backward()
        self.opt.step()
        torch.nn.utils.clip_grad_norm_(self.params, 1.0)
