import torch


class LitLike:
    def training_step(self, batch):
        loss = self.model(batch)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        return loss

    def fit(self, loader):
        for batch in loader:
            loss = self.training_step(batch)
            self.history.append(loss.detach())
