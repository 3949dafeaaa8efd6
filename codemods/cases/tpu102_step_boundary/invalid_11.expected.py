import torch
import torch_xla
import torch_xla.core.xla_model as xm


class LitLike:
    def training_step(self, batch):
        loss = self.model(batch)
        loss.backward()
        xm.optimizer_step(self.opt)
        self.opt.zero_grad()
        return loss

    def fit(self, loader):
        for batch in loader:
            loss = self.training_step(batch)
            torch_xla.sync()
            self.history.append(loss.detach())
