import torch

optimizer = torch.optim.LBFGS(model.parameters(), lr=0.8)
for i in range(15):
    def closure():
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        return loss
    loss = optimizer.step(closure)
    print(i, loss)
