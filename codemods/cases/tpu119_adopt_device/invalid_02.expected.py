import torch
import torch_xla

device = torch_xla.device()

X = torch.randn(256, 4)
Y = X.sum(1, keepdim=True)
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)).to(device)
opt = torch.optim.Adam(net.parameters())
X, Y = X.to(device), Y.to(device)
for epoch in range(50):
    noise = torch.randn(256, 4, device=device) * 0.01
    loss = ((net(X + noise) - Y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
with torch.no_grad():
    print(net(torch.zeros(1, 4, device=device)))
