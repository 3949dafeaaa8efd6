import torch
import torch.multiprocessing as mp


def main(args):
    ngpus = torch.cuda.device_count()
    mp.spawn(main_worker, nprocs=ngpus, args=(args,))
