import torch
from torch import nn


def train(model, loader, optimizer, criterion):
    model.train()
    for data, target in loader:
        optimizer.zero_grad()
        output = model(data)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()


def main():
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, loader, optimizer, nn.CrossEntropyLoss())
