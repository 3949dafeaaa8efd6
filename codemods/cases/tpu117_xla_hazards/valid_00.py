import torch


def get_batch(source, i, bptt=35):
    return source[i:i + bptt].to(device), source[:, :bptt]


def train(model, data, opt):
    for i in range(0, data.size(0) - 1, 35):
        x, y = get_batch(data, i)
        model(x, y).backward()
        opt.step()


def report(data):
    for i in range(3):
        print(data[i:i + 2])
