"""A loop that trains nothing: a regression head of one output scored by cross-entropy.

Cross-entropy over a single class is 0 for every input (softmax of one logit is 1), so the gradients
are zero and SGD never moves a parameter. Any migration agrees with it; verify must say so rather
than call the runs equivalent.
"""

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    dataset = TensorDataset(torch.rand(64, 20, generator=g), torch.rand(64, 1, generator=g))
    loader = DataLoader(dataset, batch_size=16)
    model = torch.nn.Linear(20, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    for epoch in range(2):
        for source, targets in loader:
            source, targets = source.to(device), targets.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(source), targets)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
