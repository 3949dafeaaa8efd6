import torch.distributed as dist
import torch_xla

device = torch_xla.device()


def setup():
    dist.init_process_group("gloo")


def run(cfg):
    setup()
    train(cfg, device)


if __name__ == "__main__":
    cfg = load_config()
    run(cfg)
