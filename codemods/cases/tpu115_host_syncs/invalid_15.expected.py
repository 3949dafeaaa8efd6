import torch
import torch_xla

total = 0.0
for x, y in loader:
    loss = model(x, y)
    loss.backward()
    optimizer.step()
    torch_xla.sync()
    # TODO(tpu-migrate): TPU241 per-step host sync: .item() inside the training step
    total += loss.item()


def report():
    print(total)
