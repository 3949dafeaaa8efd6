import torch


def train_step(x, scaler):
    scaler.scale(model(x).sum()).backward()
    print(scaler.get_scale())


scaler = torch.cuda.amp.GradScaler()
train_step(x, scaler)
