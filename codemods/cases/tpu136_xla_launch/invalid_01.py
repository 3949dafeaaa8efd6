import torch.distributed as dist
import torch_xla
import torch_xla.distributed.xla_backend

device = torch_xla.device()


def setup():
    dist.init_process_group("xla", init_method="xla://")


def run(cfg):
    setup()
    train(cfg, device)


if __name__ == "__main__":
    cfg = load_config()
    run(cfg)
