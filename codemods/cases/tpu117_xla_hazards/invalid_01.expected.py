import torch


def get_batch(source, i, bptt=35):
    seq_len = min(bptt, len(source) - 1 - i)
    # TODO(tpu-migrate): TPU257 slice start i changes every step: one XLA graph per offset; slice on the CPU and move the batch
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)


def train(model, train_data, opt):
    for batch, i in enumerate(range(0, train_data.size(0) - 1, 35)):
        data, targets = get_batch(train_data, i)
        loss = model(data, targets)
        loss.backward()
        opt.step()
        # TODO(tpu-migrate): TPU257 slice start batch changes every step: one XLA graph per offset; slice on the CPU and move the batch
        window = train_data[batch:batch + 4]
