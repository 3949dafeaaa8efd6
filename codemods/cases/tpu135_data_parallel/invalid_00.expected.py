import torch.nn as nn

model = Net()
# TODO(tpu-migrate): TPU203 nn.DataParallel removed: data parallelism on TPU is one process per device (torch_xla.launch) or SPMD
model.to(device)
loss_fn = nn.MSELoss()
