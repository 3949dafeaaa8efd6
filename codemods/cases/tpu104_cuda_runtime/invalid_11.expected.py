import torch


class Trainer:
    def train_epoch(self, epoch):
        for x in self.loader:
            self.step(x)
        print(f"epoch {epoch} done")

        return self.losses.avg
