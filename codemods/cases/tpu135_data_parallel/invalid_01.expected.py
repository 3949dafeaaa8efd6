import torch

net = Net()
net = net.to(device)
# TODO(tpu-migrate): TPU203 nn.DataParallel removed: data parallelism on TPU is one process per device (torch_xla.launch) or SPMD

if args.resume:
    # Load checkpoint.
    checkpoint = torch.load('./checkpoint/ckpt.pth')
    # TODO(tpu-migrate): TPU207 checkpoints the original saved from its nn.DataParallel model have keys starting with 'module.': strip the prefix before load_state_dict
    net.load_state_dict(checkpoint['net'])
    start_epoch = checkpoint['epoch']
