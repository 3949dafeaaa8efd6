import torch
import torch_xla


def main_worker(gpu, args):
    model = build()
    model.to(torch_xla.device())
    device = torch_xla.device()
    criterion = nn.CrossEntropyLoss().to(device)


def train(loader, model, device):
    for images, target in loader:
        images = images.to(device)
        target = target.to(device)
