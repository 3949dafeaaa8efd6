import torch_xla


def worker(index, cfg):
    global device
    device = torch_xla.device()
    train(cfg, device)


if __name__ == "__main__":
    torch_xla.launch(worker, args=(cfg,), debug_single_process=8 == 1)
