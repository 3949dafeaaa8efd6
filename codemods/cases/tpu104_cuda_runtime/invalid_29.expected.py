from torch.cuda.amp import GradScaler, autocast

# TODO(tpu-migrate): TPU201 use torch.autocast('xla', dtype=torch.bfloat16); GradScaler is not needed with bf16
scaler = GradScaler()
# TODO(tpu-migrate): TPU201 use torch.autocast('xla', dtype=torch.bfloat16); GradScaler is not needed with bf16
with autocast():
    loss = model(x)
