import torch
import torch_xla
from tqdm import tqdm
import torch_xla.core.xla_model as xm

LOG_EVERY = 25


def train(model, loader, optimizer):
    total = 0.0
    pbar = tqdm(loader)
    for i, (x, y) in enumerate(pbar):
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        total += loss.detach()
        if i % LOG_EVERY == 0:
            xm.add_step_closure(lambda total, i: pbar.set_postfix(avg=float(total) / (i + 1)), args=(total, i))
        torch_xla.sync()
    return float(total) / len(loader)
