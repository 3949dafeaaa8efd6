import torch


class Evaluator:
    @torch.no_grad()
    def run(self, batch):
        return self.model(batch)


@torch.no_grad
def predict(model, x):
    return model(x)
