"""Repeat in the original run what the migration changed on purpose, so the runs stay comparable.

The verifier passes the places (file and line span of a call in the user's original source) where
a rule changed behaviour; only calls made from exactly those places are adjusted, so a loader the
migration left alone keeps its partial last batch on both sides.

Kinds:
    drop_last  ``DataLoader(...)`` / ``DistributedSampler(...)`` called there gets
               ``drop_last=True`` unless the call passes drop_last itself (TPU113).
"""

from __future__ import annotations

import functools
import os
import sys
from collections import Counter

# class -> how many positional arguments (after self) come before drop_last
_DROP_LAST_CLASSES = (
    ("torch.utils.data", "DataLoader", 8),
    ("torch.utils.data.distributed", "DistributedSampler", 5),
)


def install(adjustments, notes: Counter) -> None:
    places = _places(adjustments, "drop_last")
    if places:
        _install_drop_last(places, notes)


def _places(adjustments, kind: str) -> dict[str, list[tuple[int, int]]]:
    places: dict[str, list[tuple[int, int]]] = {}
    for adjustment in adjustments:
        if adjustment.get("kind") == kind:
            path = os.path.realpath(adjustment["path"])
            places.setdefault(path, []).append((adjustment["line"], adjustment["end_line"]))
    return places


def _called_from(places: dict[str, list[tuple[int, int]]], frame) -> bool:
    spans = places.get(os.path.realpath(frame.f_code.co_filename))
    return bool(spans) and any(first <= frame.f_lineno <= last for first, last in spans)


def _install_drop_last(places: dict[str, list[tuple[int, int]]], notes: Counter) -> None:
    import importlib

    for module_name, class_name, before_drop_last in _DROP_LAST_CLASSES:
        cls = getattr(importlib.import_module(module_name), class_name)
        cls.__init__ = _dropping_last(cls.__init__, places, notes, before_drop_last)


def _dropping_last(init, places, notes: Counter, before_drop_last: int):
    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        if (
            "drop_last" not in kwargs
            and len(args) <= before_drop_last
            and _called_from(places, sys._getframe(1))
        ):
            kwargs["drop_last"] = True
            notes[f"drop_last:{type(self).__name__}"] += 1
        init(self, *args, **kwargs)

    return __init__
