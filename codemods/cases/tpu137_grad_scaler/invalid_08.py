import torch

scaler = torch.cuda.amp.GradScaler()
if args.resume:
    ckpt = torch.load(args.resume)
    model.load_state_dict(ckpt['model'])
    scaler.load_state_dict(ckpt['scaler'])
    if 'scaler' in ckpt:
        scaler.load_state_dict(ckpt['scaler'])
    start_epoch = ckpt['epoch'] + 1
