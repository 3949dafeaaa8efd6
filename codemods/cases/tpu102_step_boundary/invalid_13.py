import torch


class MultiTask:
    def run(self, loader):
        for step, batch in enumerate(loader):
            losses = self.model(batch)
            sum(losses).backward()
            for i in range(len(self.optimizers)):
                self.optimizers[i].step()
            if step >= self.max_steps:
                break
