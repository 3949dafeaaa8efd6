import argparse

import numpy as np
import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()

opt = argparse.Namespace(steps=3)
data = np.random.rand(8, 10)
input = torch.from_numpy(data[2:, :-1])
input = input.to(device)
target = torch.from_numpy(data[2:, 1:])
target = target.to(device)
test_input = torch.from_numpy(data[:2, :-1])
test_target = torch.from_numpy(data[:2, 1:])
seq = Sequence().to(device)
criterion = nn.MSELoss()
optimizer = torch.optim.LBFGS(seq.parameters(), lr=0.8)
test_input, test_target = test_input.to(device), test_target.to(device)
for i in range(opt.steps):

    def closure():
        optimizer.zero_grad()
        out = seq(input)
        loss = criterion(out, target)
        loss.backward()
        return loss

    optimizer.step(closure)
    with torch.no_grad():
        pred = seq(test_input, future=4)
        loss = criterion(pred[:, :-4], test_target)
        y = pred.detach().cpu().numpy()
