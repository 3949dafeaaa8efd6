import torch
import torch_xla
from tqdm import tqdm


def train(model, loader, optimizer):
    pbar = tqdm(loader)
    for x, y in pbar:
        optimizer.zero_grad()
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        pbar.set_description(f"loss {loss.item():.3f}")
