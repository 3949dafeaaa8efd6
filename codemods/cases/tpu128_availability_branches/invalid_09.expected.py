import torch

device = torch.accelerator.current_accelerator().type
kind = torch.accelerator.current_accelerator().type
dev = (
    torch.accelerator.current_accelerator()
    if torch.accelerator.is_available()
    else torch.device("cpu")
)
