import torch.multiprocessing as mp
import torch_xla

device = torch_xla.device()


def worker(index, cfg):
    train(cfg, device)


if __name__ == "__main__":
    mp.spawn(worker, args=(cfg,), nprocs=8)
