import torch
from transformers import Trainer, TrainingArguments
import torch_xla


def train(args):
    model = build_model()
    # the Trainer moves the model itself
    trainer = Trainer(model=model, args=TrainingArguments("out"))
    trainer.train()
    probe = torch.ones(2, 8).to(torch_xla.device())
    return model(probe)
