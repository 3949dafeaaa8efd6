import torch

x = torch.zeros(3, device='cuda')
y = torch.randn(2, 2, device=f"cuda:{i}").to("cuda:0")
z = w.to(device="cuda", dtype=torch.float16)
v = w.to("cuda", torch.bfloat16, non_blocking=True)
