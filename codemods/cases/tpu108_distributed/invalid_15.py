import torch.distributed as dist


def main():
    args = parse()
    dist.init_process_group("nccl")
    train(args)


if __name__ == "__main__":
    main()
