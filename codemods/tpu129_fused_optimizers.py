"""TPU129: ``fused=True`` of a torch.optim optimizer goes (XLA tensors have no fused kernel)."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import Invalid, Safety, TpuCodemod, Valid
from ._device_analysis import DeviceAnalysis
from ._devices import XLA_LACKS, keyword, with_args

# Constructors whose ``<option>=True`` for an option XLA lacks is dropped (torch's default then).
OPTIMIZERS = "torch.optim"


class FusedOptimizers(DeviceAnalysis, TpuCodemod):
    """
    What it does
        Never asks for an optimizer implementation XLA tensors lack (``KERNEL_OPTIONS`` in
        ``_devices``: ``fused``): ``fused=True`` of a ``torch.optim`` optimizer goes, and
        torch's default implementation runs.

        The device tests that decide the option (``use_fused = fused_available and
        device_type == "cuda"``, ``fused=device.type == "cuda"``, ``dict(fused=True) if
        torch.cuda.is_available() else dict()``) are left asking about CUDA by TPU101's other
        parts: False on the XLA device, as on the CPU. ``foreach``, which XLA runs, takes the
        XLA path like any device test.

        Split off from TPU101 (``TPU101`` still names it in selections, suppressions and
        options); it runs first of TPU101's parts.

    Why
        A fused optimizer over XLA parameters raises "`fused=True` requires all the params to
        be floating point Tensors of supported devices" at its first step.

    Example
        Before::

            opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)

        After::

            opt = torch.optim.AdamW(model.parameters(), lr=3e-4)

    Left alone: ``fused=False``, a computed ``fused=`` (the decision behind it keeps asking
    about CUDA), and ``fused=`` of anything that is not a ``torch.optim`` optimizer.
    """

    CODE = "TPU129"
    NAME = "fused-optimizers"
    SUMMARY = "Drop fused=True from torch.optim optimizers: XLA tensors have no fused kernel"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = tuple(sorted(XLA_LACKS))

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(OPTIMIZERS) and facts.mentions(*XLA_LACKS)

    VALID = [
        Valid(
            "import torch\n\n"
            "opt = torch.optim.AdamW(params, fused=False)\n"
            "sgd = torch.optim.SGD(params, lr=0.1, fused=args.fused)\n"
            "norm = FusedLayerNorm(64, fused=True)\n",
            why="fused off, a user's choice, and a fused= of something that is not torch.optim",
        ),
    ]

    INVALID: list[Invalid] = []  # in files: cases/tpu129_fused_optimizers/

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        """``torch.optim.AdamW(..., fused=True)`` -> ``torch.optim.AdamW(...)``."""
        if not self._active or not any(_lacking_true(arg) for arg in original_node.args):
            return updated_node
        func = original_node.func
        if not self.may_be_under(func, OPTIMIZERS) or not any(
            name.startswith(OPTIMIZERS + ".") for name in self.qualified_names(func)
        ):
            return updated_node
        self.record_rewrite()
        return with_args(
            updated_node,
            [
                new
                for old, new in zip(original_node.args, updated_node.args)
                if not _lacking_true(old)
            ],
        )


def _lacking_true(arg: cst.Arg) -> bool:
    """``fused=True``: an option XLA lacks, asked for."""
    return (
        keyword(arg) in XLA_LACKS and isinstance(arg.value, cst.Name) and arg.value.value == "True"
    )
