import torch
import torch_xla

device = torch_xla.device()


def fit(model, opt, dl, epochs):
    for _ in range(epochs):
        for xb, yb in dl:
            xb, yb = xb.to(device), yb.to(device)
            loss = model(xb, yb)


fit(model, opt, torch.utils.data.DataLoader(ds, batch_size=4), 3)
