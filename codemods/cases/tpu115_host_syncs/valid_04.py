import torch
import torch_xla


def train(model, loader, optimizer, args):
    for i, (x, y) in enumerate(loader):
        lr = float(args.lr)
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        print(f"epoch {args.epoch} step {i} lr {lr}")
        stats = {"n": x.size(0)}
        for k, v in stats.items():
            print(k, v)
    print("done", loss.item())
