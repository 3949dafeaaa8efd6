import torch
import torch_xla
from tqdm import tqdm


def train(model, loader, optimizer):
    pbar = tqdm(loader)
    for i, (x, y) in enumerate(pbar):
        optimizer.zero_grad()
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        pbar.set_postfix(loss=loss.item())
        torch_xla.sync()
