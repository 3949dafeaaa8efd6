import torch


def overlap(x, y):
    side = torch.cuda.Stream()
    start = torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(side):
        z = x @ y
    torch.cuda.current_stream().wait_stream(side)
    return z, start
