import torch


class Trainer:
    def train_epoch(self, epoch):
        for x in self.loader:
            self.step(x)
        print(f"epoch {epoch} done")

        # release cached blocks between epochs (helps when other jobs share the GPU)
        torch.cuda.empty_cache()
        return self.losses.avg
