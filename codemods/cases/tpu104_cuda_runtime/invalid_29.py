from torch.cuda.amp import GradScaler, autocast

scaler = GradScaler()
with autocast():
    loss = model(x)
