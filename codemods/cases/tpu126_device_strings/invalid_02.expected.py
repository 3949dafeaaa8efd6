from dataclasses import dataclass

import torch
import torch_xla


@dataclass
class TrainConfig:
    device: str = "xla"
    lr: float = 1e-3


config = {"device": "xla", "backend": "cuda"}
config["device"] = "xla"
run = Trainer(device='xla', name='cuda')


def evaluate(model, eval_device="xla"):
    if "xla" in str(eval_device) or eval_device.type in ("xla", "mps"):
        model.half()
