import torch
import torch_xla

args.cuda = not args.no_cuda
if args.cuda:
    torch.cuda.manual_seed(args.seed)
loader = DataLoader(ds, pin_memory=args.cuda)
if args.cuda: model.to(torch_xla.device())
