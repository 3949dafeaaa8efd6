import torch


class Trainer:
    def __init__(self, model, lr):
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
            self.optimizer, T_max=10
        )

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            for batch in loader:
                loss = self.model(**batch).loss
                loss.backward()
                self.optimizer.step()
                self.scheduler.step()
                self.optimizer.zero_grad()
