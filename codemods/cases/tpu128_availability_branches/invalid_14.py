import torch
from torch.cuda import is_available


def setup():
    if not is_available():
        raise SystemExit('needs a GPU')


def move(x, rank):
    torch.set_default_device('cuda')
    return x.to(
        f"cuda:{rank}",
        non_blocking=True,
    )
