"""Small loop that logs GPU memory, the accelerator type and a bf16 autocast region each step."""

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(1)
x, y = torch.randn(24, 10, generator=g), torch.randint(0, 3, (24,), generator=g)
print("gpu:", torch.cuda.get_device_name(device))
for step in range(10):
    with torch.autocast(device.type, dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x.to(device)), y.to(device))
    used, peak = torch.cuda.memory_allocated(device), torch.cuda.max_memory_allocated(device)
    print(f"step {step}: {used} bytes in use, peak {peak}")
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
