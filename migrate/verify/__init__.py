"""`tpu-migrate verify`: equivalence of the original and the migrated training loop, on the CPU.

Both scripts run in their own process with the instrumentation in ``bootstrap/`` (seeds, optimizer
step hooks, dropout/autocast switches, the original's CUDA-to-CPU mapping, XLA metrics on the
migrated side); ``runner`` collects their traces, ``compare`` judges them, ``render`` reports.

The names below come from ``session`` when first used: the CLI imports ``verify.command`` to
build its parser, and importing this package must not bring in the session (the engine, the
rules, libcst) for that.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .session import Options, Report, UsageError, verify

__all__ = ["Options", "Report", "UsageError", "verify"]


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module(".session", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
