import torch.distributed as dist
import torch_xla
import torch_xla.distributed.xla_backend


def setup():
    dist.init_process_group("xla", init_method="xla://")


def run(cfg):
    setup()
    train(cfg, device)


def _mp_fn(index, cfg):
    global device
    device = torch_xla.device()
    run(cfg)


if __name__ == "__main__":
    cfg = load_config()
    torch_xla.launch(_mp_fn, args=(cfg,))
