import torch


def train(model, data: torch.Tensor, opt):
    for i in range(0, data.size(0), 4):
        data[i:i + 4] = 0
        data[i:i + 4].add_(1)
        x = data[i:i + 4].to('xla')
        loss = model(x).sum()
        loss.backward()
        opt.step()
