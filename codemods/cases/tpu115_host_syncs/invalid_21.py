import torch
import torch_xla


def train(model, loader, optimizer, history):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
        loss_value = loss.item()
        optimizer.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f} grad {grad_norm:.3f}")
        history.append(loss_value)


def train_scale(model, loader, optimizer):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        temperature = model.temperature.item()
        optimizer.step()
        torch_xla.sync()
        if step % 10 == 0:
            print(f"step {step}: temperature {temperature:.3f}")
