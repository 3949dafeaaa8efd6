from dataclasses import dataclass

import torch


@dataclass
class TrainConfig:
    device: str = "cuda"
    lr: float = 1e-3


config = {"device": "cuda:0", "backend": "cuda"}
config["device"] = "cuda"
run = Trainer(device='cuda', name='cuda')


def evaluate(model, eval_device="cuda"):
    if "cuda" in str(eval_device) or eval_device.type in ("cuda", "mps"):
        model.half()
