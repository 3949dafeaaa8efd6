import torch


def main(seed):
    use_cuda = torch.cuda.is_available()

    # warn about slow CPU runs
    if not use_cuda:
        print('no gpu')

    model = Net()
    return model
