import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        xm.optimizer_step(optimizer)
        torch_xla.sync()
        if batch_idx % args.log_interval == 0:
            print(epoch, batch_idx, loss.item())


def main():
    optimizer = torch.optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        scheduler.step()
