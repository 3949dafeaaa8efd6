import torch

if args.resume:
    ckpt = torch.load(args.resume)
    model.load_state_dict(ckpt['model'])
    start_epoch = ckpt['epoch'] + 1
