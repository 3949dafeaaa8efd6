import torch
import torch_xla


class Last:
    def update(self, val):
        self.val = val  # kept, but the class never formats it


class Shown:
    def update(self, val, n):
        self.val = float(val)
        self.n = n

    def __repr__(self):
        return f"{self.val:.3f} over {self.n}"


def evaluate(model, loader, meter):
    with torch.no_grad():
        for images, target in loader:
            meter.update(model(images).mean(), 1)


def train(model, loader, optimizer, criterion):
    last, shown = Last(), Shown()
    for images, target in loader:
        loss = criterion(model(images), target)
        loss.backward()
        optimizer.step()
        last.update(loss.detach())
        shown.update(images.size(0), n=len(target))
        torch_xla.sync()
