import torch
import torch_xla


def main(args):
    use_cuda = not args.no_cuda
    use_mps = not args.no_mps and torch.backends.mps.is_available()
    if use_cuda:
        device = torch_xla.device()
    elif use_mps:
        device = torch.device("mps")
    else:
        device = torch.device("cpu")
    train_kwargs = {'batch_size': args.batch_size}
    if use_cuda:  # only on the GPU
        cuda_kwargs = {'num_workers': 1, 'pin_memory': True}
        train_kwargs.update(cuda_kwargs)
        # end of GPU settings
    if use_cuda and args.distributed:
        setup(args)
    if not use_cuda:
        print('slow')
    return device
