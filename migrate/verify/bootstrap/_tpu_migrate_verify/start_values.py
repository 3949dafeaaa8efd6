"""Whether the original run's steps changed its parameters at all.

Two runs that both leave every parameter where it started agree whatever the migration did to the
backward pass and the update: a loss that is constant by construction (a cross-entropy over a
single class, a target equal to the input) gives zero gradients, and the comparison then proves
nothing. The original side keeps a copy of each parameter as it was before its first step and tells
the verifier how many moved. It is a CPU copy of the trainable parameters, taken once; the migrated
side keeps none (a copy there would add graph work to the steps being measured).
"""

from __future__ import annotations

import torch


class StartValues:
    def __init__(self) -> None:
        self._first: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # id -> (param, its copy)

    def remember(self, tensors) -> None:
        """Keeps a copy of each tensor not seen before: call it before the tensors are updated."""
        for tensor in tensors:
            if isinstance(tensor, torch.Tensor) and id(tensor) not in self._first:
                self._first[id(tensor)] = (tensor, tensor.detach().to("cpu", copy=True))

    def moved(self, params) -> tuple[int, int]:
        """(how many of ``params`` differ from their first copy, how many had one)."""
        moved = known = 0
        for param in params:
            first = self._first.get(id(param))
            if first is None or first[0] is not param:
                continue
            known += 1
            now = param.detach().to("cpu")
            if now.shape != first[1].shape or not torch.equal(now, first[1]):
                moved += 1
        return moved, known
