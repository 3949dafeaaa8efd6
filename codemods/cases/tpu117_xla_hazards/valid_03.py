import torch
import matplotlib.pyplot as plt


def train(model, loader, opt):
    history = []
    for epoch in range(3):
        for x, y in loader:
            loss = model(x, y)
            loss.backward()
            opt.step()
            history.append(loss.detach())
        curve = torch.stack(history).cpu().numpy()
        plt.plot(curve)
