import torch
import torch_xla

dev = torch.device('xla' if args.device == 'xla' else 'cpu')
device_type = 'cpu' if device == 'cpu' else 'xla'
kind = "xla" if cfg.device.startswith("xla") else "cpu"
rank_device = 'xla' if 'xla' in str(device) else 'cpu'
x = x.to('xla' if args.device != 'cpu' else 'cpu')
y = torch_xla.device() if args.device.type in ('xla', 'mps') else torch.device('cpu')
