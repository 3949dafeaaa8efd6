import torch
import torch_xla

device = "xla"
kind = "xla"
dev = torch_xla.device()
