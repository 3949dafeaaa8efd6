import torch

for x, y in loader:
    optimizer.zero_grad()
    with torch.autocast("xla", dtype=torch.bfloat16):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
