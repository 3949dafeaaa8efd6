import torch
from transformers import Trainer, TrainingArguments


def train(args):
    model = build_model()
    # the Trainer moves the model itself
    model = model.cuda()
    trainer = Trainer(model=model, args=TrainingArguments("out"))
    trainer.train()
    probe = torch.ones(2, 8).cuda()
    return model(probe)
