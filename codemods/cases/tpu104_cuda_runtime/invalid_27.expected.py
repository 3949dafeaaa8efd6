import torch


def overlap(x, y):
    # TODO(tpu-migrate): TPU201 CUDA streams have no XLA equivalent; XLA orders device work itself
    side = torch.cuda.Stream()
    # TODO(tpu-migrate): TPU201 CUDA events have no XLA equivalent; time with xm.wait_device_ops()
    start = torch.cuda.Event(enable_timing=True)
    # TODO(tpu-migrate): TPU201 CUDA streams have no XLA equivalent; XLA orders device work itself
    with torch.cuda.stream(side):
        z = x @ y
    # TODO(tpu-migrate): TPU201 CUDA streams have no XLA equivalent; XLA orders device work itself
    torch.cuda.current_stream().wait_stream(side)
    return z, start
