import torch
import torch_xla
import torch_xla.core.xla_model as xm

optimizer = torch.optim.LBFGS(model.parameters(), lr=0.8)
for i in range(15):
    def closure():
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        return loss
    loss = xm.optimizer_step(optimizer, optimizer_args={"closure": closure})
    torch_xla.sync()
    print(i, loss)
