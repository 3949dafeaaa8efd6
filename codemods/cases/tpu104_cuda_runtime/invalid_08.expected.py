import torch


def main(args):
    torch.manual_seed(args.seed)

    model = build_model(args)
    return model
