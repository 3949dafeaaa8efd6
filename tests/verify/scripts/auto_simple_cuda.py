"""For the automatic migration: the only CUDA-specific code is .to("cuda"), and nothing marks the step."""

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).to("cuda")
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(1)
inputs = torch.randn(10, 4, 8, generator=g)
targets = torch.randn(10, 4, 1, generator=g)
for x, y in zip(inputs, targets):
    x, y = x.to("cuda"), y.to("cuda")
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
print("done")
