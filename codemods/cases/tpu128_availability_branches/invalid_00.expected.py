import torch

use_gpu = args.use_gpu
if use_gpu:
    if args.rank >= 0:
        torch.cuda.set_device(args.rank)
    device = torch.device("cuda", args.rank)
else:
    device = torch.device("cpu")
