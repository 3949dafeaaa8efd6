import torch

dev = torch.device('cuda' if args.device == 'cuda' else 'cpu')
device_type = 'cpu' if device == 'cpu' else 'cuda'
kind = "cuda" if cfg.device.startswith("cuda") else "cpu"
rank_device = f'cuda:{rank}' if 'cuda' in str(device) else 'cpu'
x = x.to('cuda' if args.device != 'cpu' else 'cpu')
y = torch.device('cuda') if args.device.type in ('cuda', 'mps') else torch.device('cpu')
