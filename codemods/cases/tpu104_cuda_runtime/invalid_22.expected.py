import torch
import torch.multiprocessing as mp


def main(args):
    # TODO(tpu-migrate): TPU201 no XLA call may run before launch; move this into the launched function
    ngpus = torch.cuda.device_count()
    mp.spawn(main_worker, nprocs=ngpus, args=(args,))
