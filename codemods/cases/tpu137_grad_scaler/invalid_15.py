import torch


class Trainer:
    def __init__(self, model, opt):
        self.model = model
        self.opt = opt
        self.scaler = torch.cuda.amp.GradScaler()

    def fit(self, loader):
        for x in loader:
            self.backward_and_step(self.model(x).sum(), self.scaler)

    def backward_and_step(self, loss, scaler):
        scaler.scale(loss).backward()
        scaler.step(self.opt)
        scaler.update()
        torch.save(self.model.state_dict(), path)
