import torch
import torch_xla
from tqdm import tqdm


def train(model, loader, optimizer):
    pbar = tqdm(loader)
    for i, (x, y) in enumerate(pbar):
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if i % 10 == 0:
            pbar.set_postfix(loss=loss.item(), lr=optimizer.param_groups[0]["lr"])
        torch_xla.sync()
