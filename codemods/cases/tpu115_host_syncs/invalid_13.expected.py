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
        # TODO(tpu-migrate): TPU241 per-step host sync: .item() inside the training step
        pbar.set_postfix(loss=loss.item())
