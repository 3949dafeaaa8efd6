import torch
from accelerate import Accelerator


def main():
    accelerator = Accelerator()
    model = Net().to(accelerator.device)
    optimizer = torch.optim.AdamW(model.parameters())
    model, optimizer, loader = accelerator.prepare(model, optimizer, make_loader())
    for batch in loader:
        mask = torch.ones(batch.shape[0], device=accelerator.device)
        loss = (model(batch) * mask).sum()
        accelerator.backward(loss)
        optimizer.step()
