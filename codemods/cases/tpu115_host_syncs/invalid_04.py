import torch
import torch_xla
from tqdm import tqdm

LOG_EVERY = 10  # steps between progress-bar updates (each one reads the device)


def train(model, loader, optimizer):
    pbar = tqdm(loader)
    for i, (x, y) in enumerate(pbar):
        optimizer.zero_grad()
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        if i % LOG_EVERY == 0:
            pbar.set_postfix(loss=loss.item())
        torch_xla.sync()
