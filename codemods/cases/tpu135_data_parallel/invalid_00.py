import torch.nn as nn

model = Net()
model = nn.DataParallel(model)
model.to(device)
loss_fn = nn.MSELoss()
