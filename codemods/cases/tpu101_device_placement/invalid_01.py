import torch

a = torch.device("cuda")
b = torch.device('cuda:0')
c = torch.device(f"cuda:{rank}")
d = torch.device("cuda", args.local_rank)
e = torch.device('cuda:{}'.format(args.gpu))
f = torch.device("cuda:" + str(rank))
g = torch.device(type="cuda", index=0)
h = torch.device("cpu")
