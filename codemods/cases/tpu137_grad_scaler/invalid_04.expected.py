import torch

loss.backward()
optimizer.step()
torch.save(model.state_dict(), path)
