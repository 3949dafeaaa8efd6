import torch


def backward(loss):
    loss.backward()


def train(model, x):
    backward(model(x).sum())
    opt.step()


train(model, x)
torch.save(model.state_dict(), path)
