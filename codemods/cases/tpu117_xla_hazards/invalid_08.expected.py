import torch


def compute_loss(model, batch):
    out = model(batch["x"])
    valid = batch["y"] != -100
    # TODO(tpu-migrate): TPU251 boolean-mask indexing has a data-dependent shape; use torch.where / masked_fill
    # TODO(tpu-migrate): TPU253 .tolist() copies to the host on every step; read values every N steps
    return out[valid].mean(), batch["y"][valid].unique().tolist()


def train(model, loader, opt):
    for batch in loader:
        loss, classes = compute_loss(model, batch)
        loss.backward()
        opt.step()
