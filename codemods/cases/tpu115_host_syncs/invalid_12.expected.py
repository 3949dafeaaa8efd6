import torch
import torch_xla


def train_step(model, batch, optimizer):
    loss = model(batch)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


def fit(model, loader, optimizer, epochs):
    for epoch in range(epochs):
        total = 0
        for batch in loader:
            loss = train_step(model, batch, optimizer)
            total += loss.detach()
            torch_xla.sync()
        print(f"epoch {epoch} loss {float(total) / len(loader):.4f}")
