import torch
import torch.nn.functional as F
import torch_xla

device = torch_xla.device()

fc = torch.nn.Linear(4, 1).to(device)

for batch_idx in range(100):
    # Get data
    batch_x, batch_y = get_batch()
    batch_x, batch_y = batch_x.to(device), batch_y.to(device)
    fc.zero_grad()
    output = F.smooth_l1_loss(fc(batch_x), batch_y)
    output.backward()
    for param in fc.parameters():
        param.data.add_(-0.1 * param.grad)

print(fc.weight.view(-1).detach().cpu().numpy())
