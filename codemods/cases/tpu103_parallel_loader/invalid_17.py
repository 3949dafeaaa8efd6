import torch
import torch_xla
from torch.utils.data import DataLoader

device = torch_xla.device() if opt.accel else torch.device('cpu')
train_loader = DataLoader(train_set, batch_size=opt.batch_size, shuffle=True)

for epoch in range(opt.epochs):
    for iteration, batch in enumerate(train_loader, 1):
        input, target = batch[0].to(device), batch[1].to(device)
        loss = criterion(model(input), target)
