import torch
from torch.nn.utils.rnn import pad_sequence


def pad_to_bucket(padded, multiple, value, batch_first=False, max_length=None):
    """Pad the time dimension of a pad_sequence() result up to the next multiple of ``multiple``
    (at most ``max_length``, never below the batch's own length), so that XLA compiles one graph
    per length bucket instead of one per batch length."""
    time_dim = 1 if batch_first else 0
    length = padded.size(time_dim)
    target = -(-length // multiple) * multiple
    if max_length is not None:
        target = max(min(target, max_length), length)
    padding = [0, 0] * (padded.dim() - time_dim - 1) + [0, target - length]
    return torch.nn.functional.pad(padded, padding, value=value)


PAD = 0
MAX_LEN = 128


def collate(batch):
    tokens = pad_to_bucket(pad_sequence([b[0] for b in batch], batch_first=True, padding_value=PAD), multiple=64, value=PAD, batch_first=True, max_length=MAX_LEN)
    labels = pad_to_bucket(pad_sequence([b[1] for b in batch], batch_first=True, padding_value=-100), multiple=64, value=-100, batch_first=True, max_length=MAX_LEN)
    return tokens, tokens != PAD, labels
