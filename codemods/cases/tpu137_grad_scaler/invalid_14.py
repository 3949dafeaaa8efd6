import torch


def save(path, model, scaler):
    torch.save({'model': model.state_dict(), 'scaler': scaler.state_dict()}, path)


def load(path, model, scaler):
    ckpt = torch.load(path)
    model.load_state_dict(ckpt['model'])
    scaler.load_state_dict(ckpt['scaler'])


scaler = torch.cuda.amp.GradScaler()
load(resume, model, scaler)
save(
    path,
    model,
    scaler=scaler,
)
save(best_path, model, scaler)
