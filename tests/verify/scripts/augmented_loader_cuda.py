"""A loop whose data draws from the global generator (a random augmentation, a shuffled sampler, a
dataset that reseeds per sample as torchvision's FakeData does) and whose step draws noise on the
device: the order of the two kinds of draws decides what both see."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Augmented(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        state = torch.get_rng_state()  # FakeData's way to make sample `index` the same each time
        torch.manual_seed(index)
        sample = torch.randn(12)
        torch.set_rng_state(state)
        return sample + 0.1 * torch.randn(12), index % 2  # the augmentation: the global generator


def main():
    torch.manual_seed(0)
    device = torch.device("cuda")
    loader = DataLoader(Augmented(), batch_size=4, shuffle=True)
    model = nn.Sequential(nn.Linear(12, 16), nn.Tanh(), nn.Linear(16, 2)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        noise = 0.05 * torch.randn(x.shape, device=device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x + noise), y)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
