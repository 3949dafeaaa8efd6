import torch
import torch_xla

total = 0.0
for x, y in loader:
    loss = model(x, y)
    loss.backward()
    optimizer.step()
    torch_xla.sync()
    total += loss.item()


def report():
    print(total)
