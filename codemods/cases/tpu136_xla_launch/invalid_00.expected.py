import torch.distributed as dist
import torch_xla
import torch_xla.distributed.xla_backend


def main():
    args = parse()
    dist.init_process_group("xla", init_method="xla://")
    train(args)


def _mp_fn(index):
    main()


if __name__ == "__main__":
    torch_xla.launch(_mp_fn)
