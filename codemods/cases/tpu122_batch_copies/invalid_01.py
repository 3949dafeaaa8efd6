import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.distributed.parallel_loader as pl


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(pl.MpDeviceLoader(train_loader, device)):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(batch_idx * len(data), len(train_loader.dataset), loss.item())


def test(model, device, test_loader):
    model.eval()
    with torch.no_grad():
        for data, target in pl.MpDeviceLoader(test_loader, device):
            data, target = data.to(device), target.to(device)
            output = model(data)


def main():
    device = torch_xla.device()
    train_kwargs = {'batch_size': 64}
    cuda_kwargs = {'num_workers': 1,
                   'shuffle': True}
    train_kwargs.update(cuda_kwargs)
    train_loader = torch.utils.data.DataLoader(dataset1, **train_kwargs)
    test_loader = torch.utils.data.DataLoader(dataset2, batch_size=1000)
    for epoch in range(1, 15):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
