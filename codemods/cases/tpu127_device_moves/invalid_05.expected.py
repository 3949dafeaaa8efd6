import torch
import torch_xla

if args.distributed:
    setup_ddp(args)
elif args.gpu is not None:
    model = model.to(torch_xla.device())
elif torch.backends.mps.is_available():
    device = torch.device("mps")
    model = model.to(device)
else:
    model = torch.nn.DataParallel(model).to(torch_xla.device())
