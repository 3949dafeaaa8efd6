import torch
import torch_xla


def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        if x is None:
            continue
        print(f"loss {loss.item():.4f}")
        pbar.set_postfix(loss=loss.item())
