import torch
import torch.nn.functional as F
import torch_xla

for x, y in loader:
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    print(loss)
    torch_xla.sync()
