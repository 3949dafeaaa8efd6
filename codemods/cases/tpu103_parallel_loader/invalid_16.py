import torch
import torch_xla


def train(args, model, device, train_loader, optimizer):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
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
