import torch
from torch import nn
import torch_xla

device = torch_xla.device()


def train(model, loader, optimizer, criterion):
    model.train()
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()


def main():
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, loader, optimizer, nn.CrossEntropyLoss())
