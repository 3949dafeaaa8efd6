"""TPU132: DistributedDataParallel without CUDA device arguments (split off from TPU108)."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import Invalid, Safety, TpuCodemod, Valid
from ._distributed import LaysOutRebuiltCalls, assign_equal, is_to_call_on, with_commas

DDP = (
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
)
# DistributedDataParallel(module, device_ids, output_device, ...): the CUDA-only arguments.
DROPPED_DDP_KEYWORDS = frozenset({"device_ids", "output_device"})


class DdpArguments(LaysOutRebuiltCalls, TpuCodemod):
    """
    What it does
        ``DDP(model, device_ids=[...], output_device=...)`` -> ``DDP(model,
        gradient_as_bucket_view=True)``: the CUDA device arguments go, other keywords stay, and
        ``gradient_as_bucket_view=True`` is added unless given. A ``.to(device)`` on the DDP
        wrapper is dropped: the wrapped model is already on the device. Split off from TPU108,
        which still names it.

    Why
        ``device_ids`` and ``output_device`` name CUDA devices; each process ``torch_xla.launch``
        starts owns one XLA device, which DDP takes from the module. ``gradient_as_bucket_view=
        True`` is what every torch_xla DDP example passes: the gradients are views into the
        all-reduce buckets, which saves a copy of them.

    Semantics changes
        Gradients are views into DDP's all-reduce buckets, so ``detach_()`` cannot be called
        on them (PyTorch's note on the option).

    Example
        Before::

            model = DDP(model, device_ids=[local_rank], output_device=local_rank)

        After::

            model = DDP(model, gradient_as_bucket_view=True)
    """

    CODE = "TPU132"
    NAME = "ddp-arguments"
    SUMMARY = "DDP(model, device_ids=...) -> DDP(model, gradient_as_bucket_view=True)"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("DistributedDataParallel",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(*DDP)

    VALID = [
        Valid(
            "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
            "model = DDP(model, gradient_as_bucket_view=True)\n",
            why="already the XLA form",
        ),
    ]
    INVALID = [
        Invalid(
            "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
            "model = DDP(model, device_ids=[local_rank], output_device=local_rank)\n",
            "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
            "model = DDP(model, gradient_as_bucket_view=True)\n",
        ),
    ]

    def rebuilt_call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if self.is_name(original.func, *DDP):
            return self._xla_ddp(updated)
        if is_to_call_on(updated) and self._is_ddp_call(original.func.value):
            self.record_rewrite()
            return updated.func.value
        return updated

    def _xla_ddp(self, call: cst.Call) -> cst.Call:
        positional = [a for a in call.args if a.keyword is None]
        if not positional or len(positional) > 3 or any(a.star for a in call.args):
            return call
        kept = [positional[0]] + [
            a
            for a in call.args
            if a.keyword is not None and a.keyword.value not in DROPPED_DDP_KEYWORDS
        ]
        has_view = any(
            a.keyword is not None and a.keyword.value == "gradient_as_bucket_view" for a in kept
        )
        if len(kept) == len(call.args) and has_view:
            return call
        if not has_view:
            kept.append(
                cst.Arg(
                    cst.Name("True"),
                    keyword=cst.Name("gradient_as_bucket_view"),
                    equal=assign_equal(),
                )
            )
        self.record_rewrite()
        return call.with_changes(
            args=with_commas(kept), whitespace_before_args=cst.SimpleWhitespace("")
        )

    def _is_ddp_call(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Call) and self.is_name(node.func, *DDP)
