"""Where the migrated run put its model and built its optimizers, in the user's own code.

A migrated run that trained off XLA gets the verdict ``not-on-xla``; these records let it name the
place that went wrong: the ``module.to(...)`` call that moved the model elsewhere, or the line that
built an optimizer over CPU tensors.
"""

from __future__ import annotations

import functools
import os
import sys

MOVES: list[dict] = []  # {"device", "where"} for the first module moves made from user code
OPTIMIZERS: list[dict] = []  # {"where", "devices"} for each optimizer built
_LIMIT = 8
_HERE = os.path.dirname(os.path.realpath(__file__))


def install() -> None:
    import torch

    module_to = torch.nn.Module.to

    @functools.wraps(module_to)
    def to(self, *args, **kwargs):
        result = module_to(self, *args, **kwargs)
        where = _user_frame()
        if where and len(MOVES) < _LIMIT:
            device = next((p.device for p in self.parameters()), None)
            MOVES.append({"device": str(device), "where": where})
        return result

    torch.nn.Module.to = to
    init = torch.optim.Optimizer.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        devices = sorted({p.device.type for group in self.param_groups for p in group["params"]})
        OPTIMIZERS.append({"where": _user_frame(), "devices": devices})

    torch.optim.Optimizer.__init__ = __init__


def _user_frame() -> str | None:
    """file:line of the innermost caller outside torch and this instrumentation."""
    frame = sys._getframe(2)
    while frame is not None:
        path = frame.f_code.co_filename
        real = os.path.realpath(path)
        if not (real.startswith(_HERE) or f"{os.sep}torch{os.sep}" in real or path.startswith("<")):
            return f"{os.path.basename(path)}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def summary() -> dict:
    return {
        "device_moves": list(MOVES),
        "optimizer_created_at": OPTIMIZERS[0]["where"] if OPTIMIZERS else None,
    }
