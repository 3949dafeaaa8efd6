import torch
from torch.utils.data import DataLoader

train_loader = DataLoader(train_set, batch_size=64, shuffle=True, drop_last=True)
# TODO(tpu-migrate): TPU231 partial last batch recompiles: pad the last batch or accept one extra compile
test_loader = DataLoader(test_set, batch_size=256)
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    with torch.no_grad():
        for x, y in test_loader:
            correct += (model(x).argmax(1) == y).sum()
