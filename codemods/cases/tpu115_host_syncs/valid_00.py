import torch
import torch_xla


def train(model, get_batch, optimizer, log_interval, max_iters):
    iter_num = 0
    while True:
        x, y = get_batch()
        logits, loss = model(x, y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        optimizer.zero_grad(set_to_none=True)
        if iter_num % log_interval == 0:
            lossf = loss.item()
            print(f"iter {iter_num}: loss {lossf:.4f}")
        iter_num += 1
        if iter_num > max_iters:
            break
