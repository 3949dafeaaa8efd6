import torch


def train(model, loader, opt):
    for epoch in range(3):
        for x, y in loader:
            opt.zero_grad()
            loss = model(x, y)
            loss.backward()
            opt.step()
            torch.cuda.synchronize()
        torch.cuda.synchronize()
