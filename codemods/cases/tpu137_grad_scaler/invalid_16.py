import torch


def backward(loss, scaler):
    scaler.scale(loss).backward()


def train(model, x, scaler):
    backward(model(x).sum(), scaler)
    scaler.step(opt)
    scaler.update()


scaler = torch.cuda.amp.GradScaler()
train(model, x, scaler)
torch.save(model.state_dict(), path)
