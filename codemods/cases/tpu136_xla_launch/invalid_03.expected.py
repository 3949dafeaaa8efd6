import torch_xla


def worker(index, device):
    train(device)


if __name__ == "__main__":
    # TODO(tpu-migrate): TPU205 the XLA device is used before torch_xla.launch: move it into the launched function
    device = torch_xla.device()
    torch_xla.launch(worker, args=(device,))
