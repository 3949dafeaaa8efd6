import torch
import torch_xla

use_cuda = torch.cuda.is_available()
device = torch_xla.device()
opt = torch.optim.AdamW(params, fused=use_cuda)
extra = {'fused': True} if use_cuda else {}
name = torch_xla.device()
adam = torch.optim.Adam(params, fused=name.type == 'cuda')
