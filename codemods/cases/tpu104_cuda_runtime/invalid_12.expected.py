import torch


def shutdown(model):
    model.cpu()
    # --- cleanup ---


x = 1
