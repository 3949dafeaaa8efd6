import torch


def to_device(batch):
    return [t.to(device) for t in batch]


device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
if device.type == "cuda":
    torch.backends.cudnn.benchmark = True
