import torch
import torch_xla
from tqdm import tqdm
import torch_xla.core.xla_model as xm


def train(model, loader, optimizer):
    pbar = tqdm(loader)
    for i, (x, y) in enumerate(pbar):
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if i % 10 == 0:
            xm.add_step_closure(lambda loss: pbar.set_postfix(loss=loss.item(), lr=optimizer.param_groups[0]["lr"]), args=(loss,))
        torch_xla.sync()
