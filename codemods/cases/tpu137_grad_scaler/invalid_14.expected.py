import torch


def save(path, model):
    torch.save({'model': model.state_dict()}, path)


def load(path, model):
    ckpt = torch.load(path)
    model.load_state_dict(ckpt['model'])


load(resume, model)
save(
    path,
    model,
)
save(best_path, model)
