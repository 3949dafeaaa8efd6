import torch


def shutdown(model):
    model.cpu()
    # --- cleanup ---

    # hand cached memory back to the driver
    torch.cuda.empty_cache()


x = 1
