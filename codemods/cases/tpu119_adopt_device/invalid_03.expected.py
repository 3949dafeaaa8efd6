import torch
import torch_xla

device = torch_xla.device()

DATA = torch.randn(64, 4)
DATA = DATA.to(device)


def fit(model, opt):
    for step in range(10):
        opt.zero_grad()
        model(DATA).pow(2).mean().backward()
        opt.step()


model = torch.nn.Linear(4, 2).to(device)
fit(model, torch.optim.SGD(model.parameters(), lr=0.1))
