import torch
import torch_xla
from torch.utils.data import DataLoader

device = torch_xla.device()
loader = DataLoader(ds, batch_size=8)


def curriculum(ds):
    for epoch in range(3):
        loader = DataLoader(ds, batch_size=2**epoch)
        for x in loader:
            x = x.to(device)  # copy to the accelerator
            train_on(x)


def warmup():
    for epoch in range(2):
        for x in loader:

            # the batch must live on the device
            x = x.to(device)
            train_on(x)
