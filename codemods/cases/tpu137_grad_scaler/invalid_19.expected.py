import torch


def train_step(x, scaler):
    scaler.scale(model(x).sum()).backward()
    print(scaler.get_scale())


# TODO(tpu-migrate): TPU271 this GradScaler is used in a way tpu-migrate cannot unwrap (line 6); bf16 needs no loss scaling: remove it by hand
scaler = torch.cuda.amp.GradScaler()
train_step(x, scaler)
