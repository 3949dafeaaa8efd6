import torch


def main(args, use_cuda):
    train_kwargs = {"batch_size": args.batch_size}
    test_kwargs = {"batch_size": args.test_batch_size}
    if use_cuda:
        cuda_kwargs = {"num_workers": 1, "pin_memory": True, "shuffle": True}
        train_kwargs.update(cuda_kwargs)
        test_kwargs.update(cuda_kwargs)
    train_loader = torch.utils.data.DataLoader(dataset1, drop_last=True, **train_kwargs)
    # TODO(tpu-migrate): TPU231 partial last batch recompiles: pad the last batch or accept one extra compile
    test_loader = torch.utils.data.DataLoader(dataset2, **test_kwargs)
