import inspect
from contextlib import nullcontext

import torch
import torch_xla

device = 'xla'  # or 'cpu', from --device=...
device_type = 'xla' if 'xla' in device else 'cpu'
fused_available = 'fused' in inspect.signature(torch.optim.AdamW).parameters
use_fused = fused_available and device_type == 'cuda'
extra_args = dict(fused=True) if use_fused else dict()
optimizer = torch.optim.AdamW(groups, lr=lr, betas=betas, **extra_args)
ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=ptdtype)
