import torch
import torch_xla

use_cuda = not args.no_cuda
device = torch_xla.device() if use_cuda else torch.device("cpu")
kwargs = {'num_workers': 1, 'pin_memory': True} if use_cuda else {}
