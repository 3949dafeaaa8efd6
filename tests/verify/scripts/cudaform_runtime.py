"""The CUDA runtime calls of a training script: device selection, streams, events, cuDNN flags.

A side-stream prefetcher (the data_prefetcher of NVIDIA's apex imagenet example), timing with
torch.cuda.Event(enable_timing=True), torch.cuda.set_device / current_device / device(n),
torch.cuda.synchronize, and torch.backends.cudnn.benchmark / deterministic on a small conv net.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Prefetcher:
    def __init__(self, loader):
        self.loader = iter(loader)
        self.stream = torch.cuda.Stream()
        self.preload()

    def preload(self):
        try:
            self.next_input, self.next_target = next(self.loader)
        except StopIteration:
            self.next_input = self.next_target = None
            return
        with torch.cuda.stream(self.stream):
            assert torch.cuda.current_stream() is self.stream
            assert torch.accelerator.current_stream() is self.stream
            self.next_input = self.next_input.cuda(non_blocking=True).float()
            self.next_target = self.next_target.cuda(non_blocking=True)

    def next(self):
        torch.cuda.current_stream().wait_stream(self.stream)
        images, target = self.next_input, self.next_target
        if images is not None:
            images.record_stream(torch.cuda.current_stream())
            target.record_stream(torch.cuda.current_stream())
        self.preload()
        return images, target


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu", type=int, default=0)
    args = parser.parse_args()

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.enabled = True
    assert torch.backends.cudnn.benchmark and torch.backends.cudnn.deterministic

    torch.cuda.set_device(args.gpu)
    assert torch.cuda.current_device() == args.gpu
    with torch.cuda.device(1):
        assert torch.cuda.current_device() == 1
        side = torch.zeros(1, device="cuda")
    assert torch.cuda.current_device() == args.gpu and side.device.type == "cpu"
    assert torch.cuda.current_stream() == torch.cuda.default_stream()

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(64, 3)
    ).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(2)
    dataset = TensorDataset(
        torch.randn(40, 1, 4, 4, generator=g), torch.randint(0, 3, (40,), generator=g)
    )
    loader = DataLoader(dataset, batch_size=8, pin_memory=True)

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for epoch in range(2):
        prefetcher = Prefetcher(loader)
        images, target = prefetcher.next()
        while images is not None:
            start.record()
            loss = F.cross_entropy(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            end.record()
            end.synchronize()
            torch.cuda.synchronize()
            ms = start.elapsed_time(end)
            assert isinstance(ms, float) and ms >= 0.0
            print(f"epoch {epoch} loss {loss.item():.4f} {ms:.2f} ms")
            images, target = prefetcher.next()


if __name__ == "__main__":
    main()
