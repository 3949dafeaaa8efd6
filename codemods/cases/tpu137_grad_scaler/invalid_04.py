import torch

scaler = torch.cuda.amp.GradScaler() if args.amp else None
if scaler is not None:
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
else:
    loss.backward()
    optimizer.step()
torch.save(model.state_dict(), path)
