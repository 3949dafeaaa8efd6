import torch.multiprocessing as mp
import torch_xla


def worker(index, device):
    train(device)


if __name__ == "__main__":
    device = torch_xla.device()
    mp.spawn(worker, args=(device,))
