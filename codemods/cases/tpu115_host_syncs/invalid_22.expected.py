import math

import torch
import torch_xla


def train(model, batches, optimizer, criterion, log_interval):
    total_loss = 0.0
    for batch, (data, targets) in enumerate(batches):
        loss = criterion(model(data), targets)
        loss.backward()
        optimizer.step()
        total_loss += loss.detach()
        if batch % log_interval == 0 and batch > 0:
            cur_loss = float(total_loss) / log_interval
            print(f"| {batch:5d} | loss {cur_loss:5.2f} | ppl {math.exp(cur_loss):8.2f}")
            total_loss = 0
        torch_xla.sync()
