import torch


def run_epoch(model, loader, optimizer):
    for batch in loader:
        train_step(model, batch, optimizer)


def train_step(model, batch, optimizer):
    model(batch).sum().backward()
    optimizer.step()


run_epoch(model, torch.utils.data.DataLoader(ds, 8, True, drop_last=True), optimizer)
