import torch

scaler = None
if args.amp:
    scaler = torch.cuda.amp.GradScaler()

if scaler:
    scaler.scale(loss).backward()
else:
    loss.backward()
if scaler is None:
    optimizer.step()
else:
    scaler.step(optimizer)
    scaler.update()
torch.save(model.state_dict(), path)
