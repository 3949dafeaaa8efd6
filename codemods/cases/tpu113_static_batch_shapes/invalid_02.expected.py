import torch.utils.data as data


def train(model, loader, optimizer):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        optimizer.step()


def main():
    batches = data.DataLoader(
        dataset,
        batch_size=args.batch_size,
        num_workers=2,
        drop_last=True,
    )
    train(model, batches, optimizer)
