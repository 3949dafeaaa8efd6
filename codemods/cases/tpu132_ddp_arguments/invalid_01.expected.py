import torch

model = torch.nn.parallel.DistributedDataParallel(
    model, find_unused_parameters=True, gradient_as_bucket_view=True
)
