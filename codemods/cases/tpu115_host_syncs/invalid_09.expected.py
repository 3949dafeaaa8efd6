import torch
import torch_xla


def train(model, loader, optimizer):
    best = float("inf")
    history = []
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        # TODO(tpu-migrate): TPU241 per-step host sync: .item() inside the training step
        history.append(loss.item())
        # TODO(tpu-migrate): TPU241 per-step host sync: .item() inside the training step
        if loss.item() < best:
            # TODO(tpu-migrate): TPU241 per-step host sync: .item() inside the training step
            best = loss.item()
        torch_xla.sync()
    return history
