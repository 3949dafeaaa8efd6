import time

import torch
import torch_xla


class AverageMeter(object):
    def __init__(self, name, fmt=":f"):
        self.name, self.fmt = name, fmt
        self.val = self.sum = self.count = self.avg = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self):
        return ("{name} {val" + self.fmt + "} ({avg" + self.fmt + "})").format(**self.__dict__)


def topk_accuracy(output, target):
    return [output.argmax(1).eq(target).float().mean() * 100.0]


def train(model, loader, optimizer, criterion, print_freq):
    batch_time, top1 = AverageMeter("Time"), AverageMeter("Acc@1", ":6.2f")
    end = time.time()
    for i, (images, target) in enumerate(loader):
        output = model(images)
        loss = criterion(output, target)
        acc1 = topk_accuracy(output, target)
        top1.update(acc1[0], images.size(0))
        loss.backward()
        optimizer.step()
        batch_time.update(time.time() - end, n=len(images))
        end = time.time()
        if i % print_freq == 0:
            print(batch_time, top1)
        torch_xla.sync()
