import torch

props = torch.cuda.get_device_properties(0)
free, total = torch.cuda.mem_get_info()
state = torch.cuda.get_rng_state()
