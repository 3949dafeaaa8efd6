import torch
import torch_xla
import torch_xla.distributed.parallel_loader as pl


def main(args):
    loader = torch.utils.data.DataLoader(ds, batch_size=32, num_workers=4)
    device = torch_xla.device()
    model = Net().to(device)
    device_loader = pl.MpDeviceLoader(loader, device)

    # training
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(device_loader):
            # move the batch
            x = x.to(device)
            y = y.to(device)
            loss = model(x, y)
