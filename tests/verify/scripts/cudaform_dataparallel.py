"""nn.DataParallel the way pytorch/examples imagenet/main.py uses it, on a one-GPU machine.

--form plain     model = nn.DataParallel(model).cuda()
--form ids       model = nn.DataParallel(model, device_ids=[0, 1], output_device=0).cuda()
--form features  model.features = nn.DataParallel(model.features); model.cuda() (alexnet/vgg branch)
--form function nn.parallel.data_parallel(model, images, device_ids=[0]) in the loop
--form none      no wrapper (the reference the others must match)
"""

import argparse
import copy

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh())
        self.classifier = nn.Linear(16, 3)

    def forward(self, x):
        return self.classifier(self.features(x))


def make_loader():
    g = torch.Generator().manual_seed(7)
    dataset = TensorDataset(
        torch.randn(48, 10, generator=g), torch.randint(0, 3, (48,), generator=g)
    )
    return DataLoader(dataset, batch_size=8, shuffle=False, pin_memory=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--form", choices=["plain", "ids", "features", "function", "none"], default="plain"
    )
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = Net()
    unwrapped = copy.deepcopy(model)
    if args.form == "features":
        model.features = nn.DataParallel(model.features)
        model.cuda()
        assert isinstance(model.features.module, nn.Sequential)
        assert list(model.state_dict())[0] == "features.module.0.weight", list(model.state_dict())
    elif args.form in ("plain", "ids"):
        if args.form == "plain":
            model = nn.DataParallel(model).cuda()
        else:
            model = nn.DataParallel(model, device_ids=[0, 1], output_device=0).cuda()
        assert isinstance(model.module, Net)
        keys = list(model.state_dict())
        assert keys and all(k.startswith("module.") for k in keys), keys
        # a checkpoint of the wrapper loads back into it, and model.module's into the bare net
        model.load_state_dict(model.state_dict())
        unwrapped.load_state_dict(model.module.state_dict())
    else:
        model.cuda()

    def forward(x):
        if args.form == "function":
            return nn.parallel.data_parallel(model, x, device_ids=[0])
        return model(x)

    probe = torch.randn(4, 10).cuda()
    # DataParallel without usable GPUs calls the module itself: same result, same autograd graph
    assert torch.equal(forward(probe), unwrapped(probe))
    assert forward(probe).device.type == "cpu"

    criterion = nn.CrossEntropyLoss().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loader = make_loader()
    for epoch in range(args.epochs):
        model.train()
        for i, (images, target) in enumerate(loader):
            images = images.cuda(non_blocking=True)
            target = target.cuda(non_blocking=True)
            output = forward(images)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if i % 2 == 0:
                print(f"epoch {epoch} batch {i} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
