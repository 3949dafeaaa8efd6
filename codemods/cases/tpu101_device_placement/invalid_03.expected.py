import argparse
import torch
import torch_xla


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--no-accel', action='store_true')
    args = parser.parse_args()

    use_accel = not args.no_accel

    torch.manual_seed(args.seed)

    if use_accel:
        device = torch_xla.device()
    else:
        device = torch.device("cpu")

    train_kwargs = {'batch_size': args.batch_size}
    if use_accel:
        # loader settings for the accelerator
        accel_kwargs = {'num_workers': 1,
                        'pin_memory': True,
                        'shuffle': True}
        train_kwargs.update(accel_kwargs)
    model = Net().to(device)
