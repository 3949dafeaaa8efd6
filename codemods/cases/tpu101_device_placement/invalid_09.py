import torch

device = 'cuda' if torch.cuda.is_available() else 'cpu'
if device == 'cuda':
    torch.cuda.synchronize()
with torch.autocast(device_type=device, dtype=torch.bfloat16):
    loss = model(x.to(device))
print(f"trained on {device}")
