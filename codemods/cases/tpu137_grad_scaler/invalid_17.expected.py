import torch


def train_step(x, scaler):
    scaler.scale(model(x).sum()).backward()


# TODO(tpu-migrate): TPU271 this GradScaler is used in a way tpu-migrate cannot unwrap (line 9); bf16 needs no loss scaling: remove it by hand
scaler = torch.cuda.amp.GradScaler()
train_step(x, scaler)
run(train_step)
