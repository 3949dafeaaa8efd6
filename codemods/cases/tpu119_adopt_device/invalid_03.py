import torch

DATA = torch.randn(64, 4)


def fit(model, opt):
    for step in range(10):
        opt.zero_grad()
        model(DATA).pow(2).mean().backward()
        opt.step()


model = torch.nn.Linear(4, 2)
fit(model, torch.optim.SGD(model.parameters(), lr=0.1))
