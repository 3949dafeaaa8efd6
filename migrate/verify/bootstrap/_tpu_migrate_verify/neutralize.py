"""Switch off what cannot be compared between CPU and XLA: autocast, and dropout where masks differ.

Dropout is off on both sides by default. With ``--keep-dropout`` it stays on: rng_align.py draws
the migrated run's masks from the CPU generator, as the original's CPU dropout does, except inside
attention and RNN kernels, where it is switched off on both sides.

Both sides get exactly the same switches. The functions are replaced on the modules they live in
before the script runs, so module layers (nn.Dropout, nn.MultiheadAttention, Transformer layers),
functional calls and ``from torch.nn.functional import dropout`` all see the replacement.
"""

from __future__ import annotations

import functools
from collections import Counter

import torch
import torch.nn.functional as F

from .protocol import ORIGINAL, Config

# functional name -> how to make the call deterministic
_TRAINING_FLAG = (
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "alpha_dropout",
    "feature_alpha_dropout",
)
_TORCH_DROPOUT = (
    "dropout",
    "dropout_",
    "alpha_dropout",
    "alpha_dropout_",
    "feature_dropout",
    "feature_dropout_",
    "feature_alpha_dropout",
    "feature_alpha_dropout_",
)


def install(config: Config, notes: Counter) -> None:
    if not config.keep_dropout:
        _disable_dropout(notes)
    elif config.align_rng:
        _disable_unaligned_dropout(notes)
    _control_autocast(config, notes)


def _disable_unaligned_dropout(notes: Counter) -> None:
    """Dropout whose masks the alignment cannot draw on the CPU (rng_align.py) is off on both
    sides: attention's fused dropout and the dropout between the layers of RNN kernels."""
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    if sdpa is not None:
        F.scaled_dot_product_attention = _sdpa_without_dropout(sdpa, notes, "dropout:unaligned")
    for cls in (torch.nn.RNN, torch.nn.LSTM, torch.nn.GRU):
        cls.forward = _rnn_without_dropout(cls.forward, notes)


def _rnn_without_dropout(forward, notes: Counter):
    @functools.wraps(forward)
    def rnn_forward(self, *args, **kwargs):
        p = self.dropout
        if not (self.training and p):
            return forward(self, *args, **kwargs)
        notes["dropout:unaligned"] += 1
        self.dropout = 0.0
        try:
            return forward(self, *args, **kwargs)
        finally:
            self.dropout = p

    return rnn_forward


def _disable_dropout(notes: Counter) -> None:
    for name in _TRAINING_FLAG:
        original = getattr(F, name, None)
        if original is not None:
            setattr(F, name, _without_training(original, notes))
    for name in _TORCH_DROPOUT:
        original = getattr(torch, name, None)
        if original is not None:
            setattr(torch, name, _identity_dropout(original, notes))
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    if sdpa is not None:
        F.scaled_dot_product_attention = _sdpa_without_dropout(sdpa, notes)


def _without_training(dropout, notes: Counter):
    # F.dropout(input, p=0.5, training=True, inplace=False): training=False makes it the identity.
    @functools.wraps(dropout)
    def no_dropout(input, p=0.5, training=True, inplace=False):
        if training and p:
            notes["dropout"] += 1
        return dropout(input, p, False, inplace)

    return no_dropout


def _identity_dropout(dropout, notes: Counter):
    # torch.dropout(input, p, train)
    @functools.wraps(dropout)
    def no_dropout(input, p, train):
        if train and p:
            notes["dropout"] += 1
        return dropout(input, p, False)

    return no_dropout


def _sdpa_without_dropout(sdpa, notes: Counter, key: str = "dropout"):
    @functools.wraps(sdpa)
    def sdpa_no_dropout(query, key_, value, attn_mask=None, dropout_p=0.0, *args, **kwargs):
        if dropout_p:
            notes[key] += 1
        return sdpa(query, key_, value, attn_mask, 0.0, *args, **kwargs)

    return sdpa_no_dropout


def _control_autocast(config: Config, notes: Counter) -> None:
    """Autocast off by default; kept on request, with the original's CUDA autocast run on the CPU."""
    from torch.amp.autocast_mode import autocast

    original_init = autocast.__init__
    map_cuda = config.side == ORIGINAL and config.map_cuda

    @functools.wraps(original_init)
    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not config.keep_autocast:
            if enabled:
                notes["autocast"] += 1
            enabled = False
        elif map_cuda and device_type == "cuda":
            # The migration turns CUDA fp16 autocast into bf16 (the TPU type), so compare with that.
            device_type = "cpu"
            if dtype is None or dtype == torch.float16:
                dtype = torch.bfloat16
            notes["cuda:autocast"] += 1
        original_init(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    autocast.__init__ = __init__
