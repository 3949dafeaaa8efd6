import torch
import torch_xla


def main(args):
    loader = torch.utils.data.DataLoader(ds, batch_size=32, num_workers=4)
    device = torch_xla.device()
    model = Net().to(device)

    # training
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            # move the batch
            x = x.to(device)
            y = y.to(device)
            loss = model(x, y)
