import argparse
import torch
import torch_xla

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="xla", choices=["xla", "cpu"])
parser.add_argument('--train-device', type=str, default='xla')
parser.add_argument('--cuda', action='store_true', help='use cuda')
args = parser.parse_args()
if args.device.startswith("xla"):
    torch.backends.cudnn.benchmark = True
