import torch
import torch_xla
from tqdm import tqdm

LOG_EVERY = 25


def train(model, loader, optimizer):
    total = 0.0
    pbar = tqdm(loader)
    for i, (x, y) in enumerate(pbar):
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
        total += float(loss)
        if i % LOG_EVERY == 0:
            pbar.set_postfix(avg=total / (i + 1))
    return total / len(loader)
