"""Broken migration of mlp_cuda.py that crashes in its third step: it still calls xm.get_ordinal(),
which torch_xla 2.7 removed (the 2.9 spelling is torch_xla.runtime.global_ordinal())."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from torch.utils.data import DataLoader, TensorDataset


def main():
    device = torch_xla.device()
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(0)
    dataset = TensorDataset(
        torch.randn(96, 12, generator=g), torch.randint(0, 4, (96,), generator=g)
    )
    for step, (x, y) in enumerate(DataLoader(dataset, batch_size=16)):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        xm.optimizer_step(optimizer)
        torch_xla.sync()
        if step == 2:
            print(f"[xla:{xm.get_ordinal()}] step {step}")


if __name__ == "__main__":
    main()
