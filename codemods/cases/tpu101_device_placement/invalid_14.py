import torch

use_cuda = torch.cuda.is_available()
device = torch.device('cuda' if use_cuda else 'cpu')
opt = torch.optim.AdamW(params, fused=use_cuda)
extra = {'fused': True} if use_cuda else {}
name = 'cuda' if torch.cuda.is_available() else 'cpu'
adam = torch.optim.Adam(params, fused=name == 'cuda')
