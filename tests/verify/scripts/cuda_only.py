"""Needs CUDA unconditionally: .cuda(), torch.device("cuda:0"), device="cuda" factories, CUDA runtime calls.

On a machine without a GPU it only runs under the verifier's CUDA-to-CPU mapping.
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.cuda.manual_seed_all(0)
torch.backends.cudnn.benchmark = True
torch.cuda.set_device(0)
device = torch.device("cuda:0")

model = nn.Sequential(nn.Linear(6, 24), nn.GELU(), nn.LayerNorm(24), nn.Linear(24, 1)).cuda()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
g = torch.Generator().manual_seed(3)
xs = torch.randn(8, 16, 6, generator=g)
ys = (xs.sum(-1, keepdim=True) > 0).float()
scale = torch.full((1,), 0.5, device="cuda")

start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
for x, y in zip(xs, ys):
    x, y = x.cuda(non_blocking=True), y.to(device)
    optimizer.zero_grad(set_to_none=True)
    loss = nn.functional.binary_cross_entropy_with_logits(model(x) * scale, y)
    loss.backward()
    optimizer.step()
end.record()
torch.cuda.synchronize()
print(
    f"{start.elapsed_time(end):.1f} ms on {torch.cuda.get_device_name(0)}, "
    f"peak {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB"
)
