import torch
import torch_xla


def train(model, loader, optimizer):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        if step >= max_steps:
            break
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")
