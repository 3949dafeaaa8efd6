import torch

scaler = torch.cuda.amp.GradScaler()
torch.save(
    {
        'model': model.state_dict(),
        'optimizer': optimizer.state_dict(),
        'scaler': scaler.state_dict(),
    },
    path,
)
