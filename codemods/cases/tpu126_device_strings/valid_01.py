import inspect

import torch


def configure_optimizers(params, lr, device_type):
    fused_available = 'fused' in inspect.signature(torch.optim.AdamW).parameters
    use_fused = fused_available and device_type == 'cuda'
    extra_args = dict(fused=True) if use_fused else dict()
    return torch.optim.AdamW(params, lr=lr, **extra_args)
