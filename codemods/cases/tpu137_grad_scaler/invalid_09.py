import torch


class Trainer:
    def __init__(self, model, opt):
        self.opt = opt
        self.scaler = torch.cuda.amp.GradScaler()

    def step(self, loss):
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)
        self.scaler.update()
        torch.nn.utils.clip_grad_norm_(self.params, 1.0)
