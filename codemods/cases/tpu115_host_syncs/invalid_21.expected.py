import torch
import torch_xla
import torch_xla.core.xla_model as xm


def train(model, loader, optimizer, history):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).detach()
        # TODO(tpu-migrate): TPU241 per-step host sync: .item() inside the training step
        loss_value = loss.item()
        optimizer.step()
        # TODO(tpu-migrate): TPU242 per-step report of 2 device values (loss.item(), grad_norm): 2 device->host copies every step
        xm.add_step_closure(lambda step, loss, grad_norm: print(f"step {step} loss {loss.item():.4f} grad {float(grad_norm):.3f}"), args=(step, loss, grad_norm))
        history.append(loss_value)
        torch_xla.sync()


def train_scale(model, loader, optimizer):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        temperature = model.temperature.detach().clone()
        optimizer.step()
        if step % 10 == 0:
            xm.add_step_closure(lambda step, temperature: print(f"step {step}: temperature {float(temperature):.3f}"), args=(step, temperature))
        torch_xla.sync()
