import torch

def setup(args):
    use_cuda = torch.cuda.is_available()
    print('cuda:', use_cuda)
    if use_cuda:
        torch.backends.cudnn.benchmark = True
    num_workers = 4 if use_cuda else 0
    return num_workers
