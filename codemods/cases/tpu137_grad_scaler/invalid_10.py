import torch

scaler = torch.cuda.amp.GradScaler()
scaler.scale(loss).backward()
scaler.step(opt)
scaler.update()
print('scale', scaler.get_scale())
