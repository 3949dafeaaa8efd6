import argparse
import torch
import torch_xla

parser = argparse.ArgumentParser()
parser.add_argument('--device', default='xla')
args = parser.parse_args()
device = torch.device(args.device)
opt = torch.optim.AdamW(
    params, lr=1e-3, fused=device.type == 'cuda', foreach=device.type == 'xla'
)
sgd = torch.optim.SGD(params, lr=0.1)
adam = torch.optim.Adam(params,)
kwargs = {'fused': 'cuda' in args.device}
if args.device.startswith('cuda'):
    kwargs['fused'] = True
use_fused = torch.cuda.is_available()
extra = dict(fused=True) if torch.cuda.is_available() else {}
if device.type == 'xla':
    torch.backends.cudnn.benchmark = True
