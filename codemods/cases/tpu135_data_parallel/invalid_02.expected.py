import torch

# TODO(tpu-migrate): TPU203 nn.DataParallel removed: data parallelism on TPU is one process per device (torch_xla.launch) or SPMD
model = Net().to(device)


def resume(path):
    # TODO(tpu-migrate): TPU207 checkpoints the original saved from its nn.DataParallel model have keys starting with 'module.': strip the prefix before load_state_dict
    model.load_state_dict(torch.load(path))


def main(path):
    # TODO(tpu-migrate): TPU203 nn.DataParallel removed: data parallelism on TPU is one process per device (torch_xla.launch) or SPMD
    net = Net().cuda()
    if path:
        # TODO(tpu-migrate): TPU207 checkpoints the original saved from its nn.DataParallel model have keys starting with 'module.': strip the prefix before load_state_dict
        net.load_state_dict(torch.load(path), strict=True)
    return net
