"""Train a small regression MLP with PyTorch Lightning: DDP over the machine's GPUs, 16-bit mixed
precision."""

import argparse

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Regressor(L.LightningModule):
    def __init__(self, lr):
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=1e-2)
    args = parser.parse_args()
    L.seed_everything(42)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 16, generator=g)
    y = x[:, :1] * 2 - x[:, 1:2] + 0.1 * torch.randn(256, 1, generator=g)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
    trainer = L.Trainer(
        accelerator="gpu",
        devices=torch.cuda.device_count(),
        precision="16-mixed",
        strategy="ddp",
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
    )
    trainer.fit(Regressor(args.lr), loader)


if __name__ == "__main__":
    main()
