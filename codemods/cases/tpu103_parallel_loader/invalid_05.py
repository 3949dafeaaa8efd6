import torch
import torch_xla
from tqdm import tqdm

device = torch_xla.device()


def evaluate(model, val_loader):
    model.eval()
    with torch.no_grad():
        for batch in tqdm(val_loader, total=len(val_loader), desc='eval'):
            inputs = batch['x'].to(device)
            labels = batch['y'].to(device).long()
            scores = model(inputs, mask=batch['mask'].to(device))
