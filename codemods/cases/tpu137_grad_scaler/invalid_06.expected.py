import torch

torch.save(
    {
        'model': model.state_dict(),
        'optimizer': optimizer.state_dict(),
    },
    path,
)
