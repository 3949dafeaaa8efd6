import torch
import torch_xla

device = torch_xla.device()


def main(steps):
    x = torch.randn(16, 4)
    x = x.to(device)
    y = torch.randn(16, 1)
    y = y.to(device)
    net = torch.nn.Linear(4, 1).to(device)
    optimizer = torch.optim.Adam(net.parameters())
    for step in range(steps):

        def closure():
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(net(x), y)
            loss.backward()
            return loss

        optimizer.step(closure)
