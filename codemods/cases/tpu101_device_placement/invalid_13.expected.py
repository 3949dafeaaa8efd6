import torch
import torch_xla


def to_device(batch):
    return [t.to(device) for t in batch]


device = torch_xla.device()
if device.type == "cuda":
    torch.backends.cudnn.benchmark = True
