import torch


def get_batch(source, i, bptt=35):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)


def train(model, train_data, opt):
    for batch, i in enumerate(range(0, train_data.size(0) - 1, 35)):
        data, targets = get_batch(train_data, i)
        loss = model(data, targets)
        loss.backward()
        opt.step()
        window = train_data[batch:batch + 4]
