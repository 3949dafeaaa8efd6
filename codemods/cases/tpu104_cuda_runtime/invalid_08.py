import torch


def main(args):
    torch.manual_seed(args.seed)

    # let cudnn pick the fastest conv algorithms for our fixed input size
    torch.backends.cudnn.benchmark = True

    model = build_model(args)
    return model
