import torch
import torch_xla

use_gpu = args.use_gpu
if use_gpu:
    if args.rank >= 0:
        torch.cuda.set_device(args.rank)
    device = torch_xla.device()
else:
    device = torch.device("cpu")
