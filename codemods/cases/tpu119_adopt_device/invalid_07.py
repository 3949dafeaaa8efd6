import torch


def main(steps):
    x = torch.randn(16, 4)
    y = torch.randn(16, 1)
    net = torch.nn.Linear(4, 1)
    optimizer = torch.optim.Adam(net.parameters())
    for step in range(steps):

        def closure():
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(net(x), y)
            loss.backward()
            return loss

        optimizer.step(closure)
