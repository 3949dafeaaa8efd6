import torch


def train(model, loader, opt, log):
    for x, y in loader:
        loss = model(x, y)
        # TODO(tpu-migrate): TPU252 Python if on a tensor value syncs with the host every step
        if torch.isnan(loss) or not torch.isfinite(loss).all():
            raise RuntimeError("nan")
        loss.backward()
        opt.step()
        # TODO(tpu-migrate): TPU253 .numpy() copies to the host on every step; read values every N steps
        log.append(model.out.detach().cpu().numpy())
        # TODO(tpu-migrate): TPU253 .tolist() copies to the host on every step; read values every N steps
        ids = y.tolist()
        # TODO(tpu-migrate): TPU253 .to("cpu") copies to the host on every step; read values every N steps
        probs = loss.to("cpu")
