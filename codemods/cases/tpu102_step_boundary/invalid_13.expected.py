import torch
import torch_xla
import torch_xla.core.xla_model as xm


class MultiTask:
    def run(self, loader):
        for step, batch in enumerate(loader):
            losses = self.model(batch)
            sum(losses).backward()
            for i in range(len(self.optimizers)):
                xm.optimizer_step(self.optimizers[i])
            if step >= self.max_steps:
                break
            torch_xla.sync()
