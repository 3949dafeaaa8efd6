import argparse

import numpy as np
import torch
import torch.nn as nn

opt = argparse.Namespace(steps=3)
data = np.random.rand(8, 10)
input = torch.from_numpy(data[2:, :-1])
target = torch.from_numpy(data[2:, 1:])
test_input = torch.from_numpy(data[:2, :-1])
test_target = torch.from_numpy(data[:2, 1:])
seq = Sequence()
criterion = nn.MSELoss()
optimizer = torch.optim.LBFGS(seq.parameters(), lr=0.8)
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
        y = pred.detach().numpy()
