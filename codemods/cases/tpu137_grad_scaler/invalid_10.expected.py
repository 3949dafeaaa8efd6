import torch

# TODO(tpu-migrate): TPU271 this GradScaler is used in a way tpu-migrate cannot unwrap (line 7); bf16 needs no loss scaling: remove it by hand
scaler = torch.cuda.amp.GradScaler()
scaler.scale(loss).backward()
scaler.step(opt)
scaler.update()
print('scale', scaler.get_scale())
