import torch


def pretrained(net, path):
    net.load_state_dict(torch.load(path))
    return net


def build(path):
    # TODO(tpu-migrate): TPU203 nn.DataParallel removed: data parallelism on TPU is one process per device (torch_xla.launch) or SPMD
    net = Net()
    ema.load_state_dict(torch.load(path))
    return pretrained(net, path)


class Trainer:
    def __init__(self, path):
        # TODO(tpu-migrate): TPU203 nn.DataParallel removed: data parallelism on TPU is one process per device (torch_xla.launch) or SPMD
        self.model.load_state_dict(torch.load(path))


backbone.load_state_dict(torch.load(path))
# TODO(tpu-migrate): TPU203 nn.DataParallel removed: data parallelism on TPU is one process per device (torch_xla.launch) or SPMD
backbone.train()
