import torch

model = torch.nn.parallel.DistributedDataParallel(
    model, device_ids=[gpu], find_unused_parameters=True
).to(device)
