import torch
from tqdm import tqdm


class Evaluator:
    def __init__(self, model, device):
        self.model = model
        self.device = device

    def run(self):
        for batch in tqdm(self.val_loader):
            self.model(batch.to(self.device))
