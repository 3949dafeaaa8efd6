import torch

if args.distributed:
    setup_ddp(args)
elif args.gpu is not None:
    model = model.cuda(args.gpu)
elif torch.backends.mps.is_available():
    device = torch.device("mps")
    model = model.to(device)
else:
    model = torch.nn.DataParallel(model).cuda()
