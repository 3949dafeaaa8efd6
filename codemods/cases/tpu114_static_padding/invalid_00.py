import torch
from torch.nn.utils.rnn import pad_sequence

PAD = 0
MAX_LEN = 128


def collate(batch):
    tokens = pad_sequence([b[0] for b in batch], batch_first=True, padding_value=PAD)
    labels = pad_sequence([b[1] for b in batch], batch_first=True, padding_value=-100)
    return tokens, tokens != PAD, labels
