import torch

if not torch.cuda.is_available() and not torch.backends.mps.is_available():
    print('using CPU, this will be slow')
elif args.distributed:
    setup_ddp(args)
elif args.gpu is not None and torch.cuda.is_available():
    model = model.cuda(args.gpu)
elif torch.backends.mps.is_available():
    device = torch.device("mps")
    model = model.to(device)
else:
    model = torch.nn.DataParallel(model).cuda()
