import torch


def train_step(x, scaler):
    scaler.scale(model(x).sum()).backward()


scaler = torch.cuda.amp.GradScaler()
train_step(x, scaler)
run(train_step)
