import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
parser.add_argument('--train-device', type=str, default='cuda:0')
parser.add_argument('--cuda', action='store_true', help='use cuda')
args = parser.parse_args()
if args.device.startswith("cuda"):
    torch.backends.cudnn.benchmark = True
