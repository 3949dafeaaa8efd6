"""The noise run: the original again, its parameters nudged at every step by a few units of rounding.

Two correct fp32 executions of a training loop (CPU and XLA:CPU) differ by rounding in every op,
and the loop amplifies that difference by its own dynamics: little for SGD on a small MLP, a lot
for Adadelta(lr=1.0) or for Adam on near-zero gradients. The noise run measures that amplification
for the script at hand. Its parameters get a relative nudge of ``config.perturb`` when each
optimizer is built and after each step; how far its losses and parameters then drift from the
original run's is the yardstick the migrated run is judged by (see migrate/verify/compare.py).

The nudges come from a generator of their own, so the run draws the same data and the same random
numbers as the original. Several noise runs draw different nudges (one generator seed per run
index): in a chaotic loop how far a nudge carries depends on its direction, and one run alone can
land on a direction that hardly grows.
"""

from __future__ import annotations

import functools

import torch

from .recorder import _TENSOR_DATA  # Tensor.data's own getter (the recorder may wrap it)

_NUDGES: "Nudges | None" = None


class Nudges:
    def __init__(self, relative: float, seed: int, index: int = 0) -> None:
        self.relative = relative
        self.generator = torch.Generator().manual_seed(seed + 7919 * (index + 1))

    @torch.no_grad()
    def nudge(self, params) -> None:
        for param in params:
            if not isinstance(param, torch.Tensor) or not param.is_floating_point():
                continue
            # Through the tensor's data, as an optimizer does: no version bump, so a forward that
            # already saved the parameter for backward is not invalidated, and the recorder's
            # watch for manual updates does not take the nudge for one.
            data = _TENSOR_DATA.__get__(param, type(param))
            noise = torch.rand(data.shape, generator=self.generator, dtype=torch.float32)
            data.add_(
                data * (noise * 2 - 1).to(device=data.device, dtype=data.dtype) * self.relative
            )


def install(relative: float, seed: int, index: int = 0) -> None:
    global _NUDGES
    if _NUDGES is not None or relative <= 0:
        return
    _NUDGES = Nudges(relative, seed, index)
    init = torch.optim.Optimizer.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _NUDGES.nudge(_params_of(self))

    torch.optim.Optimizer.__init__ = __init__


def after_step(params) -> None:
    """Called by the recorder for each step it counts, with the parameters the step updated."""
    if _NUDGES is not None:
        _NUDGES.nudge(params)


def _params_of(optimizer) -> list:
    return [param for group in optimizer.param_groups for param in group["params"]]
