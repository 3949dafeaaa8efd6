import torch
import torch_xla
import torch_xla.distributed.parallel_loader as pl


def train(args, model, device, train_loader, optimizer):
    model.train()
    train_device_loader = pl.MpDeviceLoader(train_loader, device) if device.type == "xla" else train_loader
    for batch_idx, (data, target) in enumerate(train_device_loader):
        data, target = data.to(device), target.to(device)
        loss = model(data, target)


def main(args):
    if args.accel:
        device = torch_xla.device()
    else:
        device = torch.device('cpu')
    kwargs = {'num_workers': 1} if args.accel else {}
    train_loader = torch.utils.data.DataLoader(dataset, batch_size=64, **kwargs)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer)
