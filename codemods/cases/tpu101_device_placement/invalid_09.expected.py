import torch
import torch_xla

device = torch_xla.device()
if device.type == 'xla':
    torch.cuda.synchronize()
with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
    loss = model(x.to(device))
print(f"trained on {device}")
