import torch
import torch_xla.distributed.parallel_loader as pl


def train(model, loader, optimizer, device):
    correct = 0
    seen = 0
    for x, y in pl.MpDeviceLoader(loader, device):
        optimizer.zero_grad()
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
        loss.backward()
        optimizer.step()
        pred = logits.argmax(dim=1)
        correct += (pred == y).sum()
        seen += y.size(0)
    print(f"train accuracy {100.0 * int(correct) / seen:.1f}% ({int(correct)}/{seen})")
