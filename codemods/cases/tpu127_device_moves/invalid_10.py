import lightning as L
import torch


class Lit(L.LightningModule):
    def training_step(self, batch, batch_idx):
        x, y = batch
        weights = torch.linspace(0.5, 1.5, 10).cuda()
        noise = torch.zeros(x.shape, device="cuda:0")
        return torch.nn.functional.cross_entropy(self.net(x + noise), y, weight=weights)


model = Lit().cuda()
trainer = L.Trainer(accelerator="tpu")
trainer.fit(model, loader)
