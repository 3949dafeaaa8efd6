import torch


def train(model, loader, opt):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        opt.step()
        if step % 100 == 0:
            print(loss.detach().cpu().tolist())
            if torch.isnan(loss):
                raise RuntimeError('nan')
