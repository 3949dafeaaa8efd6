import torch


def main_worker(gpu, args):
    model = build()
    model.cuda(args.gpu)
    if args.gpu:
        device = torch.device('cuda:{}'.format(args.gpu))
    else:
        device = torch.device("cuda")
    criterion = nn.CrossEntropyLoss().cuda(args.gpu)


def train(loader, model, device):
    for images, target in loader:
        images = images.cuda(args.gpu, non_blocking=True)
        target = target.to('cuda', non_blocking=True)
