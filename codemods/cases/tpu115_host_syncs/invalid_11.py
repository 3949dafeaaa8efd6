import torch
import torch_xla.distributed.parallel_loader as pl
from tqdm import tqdm


def train(model, loader, optimizer, device):
    pbar = tqdm(pl.MpDeviceLoader(loader, device))
    for step, (x, y) in enumerate(pbar):
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % 20 == 0:
            pbar.set_postfix(acc=(out.argmax(1) == y).float().mean().item())
            print(f"step {step} loss {loss.item():.4f}")
