import torch


def train(model, loader, opt, log):
    for x, y in loader:
        loss = model(x, y)
        if torch.isnan(loss) or not torch.isfinite(loss).all():
            raise RuntimeError("nan")
        loss.backward()
        opt.step()
        log.append(model.out.detach().cpu().numpy())
        ids = y.tolist()
        probs = loss.to("cpu")
