"""TPU133: DistributedSampler shards by the XLA runtime's world (split off from TPU108)."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import XR, Invalid, Safety, TpuCodemod, Valid
from ._distributed import LaysOutRebuiltCalls, assign_equal, with_commas

DISTRIBUTED_SAMPLER = (
    "torch.utils.data.DistributedSampler",
    "torch.utils.data.distributed.DistributedSampler",
)
# DistributedSampler(dataset, num_replicas, rank, ...): the values the XLA runtime knows.
SAMPLER_ARGUMENTS: tuple[tuple[str, str], ...] = (
    ("num_replicas", "xr.world_size()"),
    ("rank", "xr.global_ordinal()"),
)


class SamplerReplicas(LaysOutRebuiltCalls, TpuCodemod):
    """
    What it does
        ``DistributedSampler(ds, ...)`` gets ``num_replicas=xr.world_size(),
        rank=xr.global_ordinal()``: given values (positional or by keyword) are replaced, missing
        ones added right after the dataset, other arguments kept. A call that passes ``*args``
        or ``**kwargs`` is left alone. Split off from TPU108, which still names it.

    Why
        Each process ``torch_xla.launch`` starts must read its own shard of the data; the XLA
        runtime knows how many processes there are and which one this is, while the values a
        CUDA script computed come from torchrun's environment, which is not set under
        ``torch_xla.launch``, or from a process group the script may not create on XLA.

    Example
        Before::

            sampler = DistributedSampler(dataset, shuffle=False)

        After::

            import torch_xla.runtime as xr

            sampler = DistributedSampler(
                dataset, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=False
            )
    """

    CODE = "TPU133"
    NAME = "sampler-replicas"
    SUMMARY = "DistributedSampler gets num_replicas=xr.world_size(), rank=xr.global_ordinal()"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("DistributedSampler",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(*DISTRIBUTED_SAMPLER)

    VALID = [
        Valid(
            "import torch_xla.runtime as xr\nfrom torch.utils.data import DistributedSampler\n\n"
            "sampler = DistributedSampler(ds, num_replicas=xr.world_size(), "
            "rank=xr.global_ordinal())\n",
            why="already the runtime's values",
        ),
        Valid(
            "from torch.utils.data import DistributedSampler\n\n"
            "sampler = DistributedSampler(*sampler_args)\n",
            why="arguments passed through unseen",
        ),
    ]
    INVALID = [
        Invalid(
            "from torch.utils.data import DistributedSampler\n\n"
            "sampler = DistributedSampler(dataset, shuffle=False)\n",
            "from torch.utils.data import DistributedSampler\nimport torch_xla.runtime as xr\n\n"
            "sampler = DistributedSampler(\n"
            "    dataset, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=False\n"
            ")\n",
        ),
        Invalid(
            "import torch.utils.data\n\n"
            "s = torch.utils.data.DistributedSampler(ds, world, rank)\n",
            "import torch.utils.data\nimport torch_xla.runtime as xr\n\n"
            "s = torch.utils.data.DistributedSampler(ds, num_replicas=xr.world_size(), "
            "rank=xr.global_ordinal())\n",
            why="positional num_replicas and rank",
        ),
    ]

    def rebuilt_call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if self.is_name(original.func, *DISTRIBUTED_SAMPLER):
            return self._runtime_sampler(updated)
        return updated

    def _runtime_sampler(self, call: cst.Call) -> cst.Call:
        if not call.args or call.args[0].keyword is not None or any(a.star for a in call.args):
            return call
        args = list(call.args)
        positional = [a for a in args if a.keyword is None]
        changed = False
        for index, (keyword, spelling) in enumerate(SAMPLER_ARGUMENTS, start=1):
            value = cst.parse_expression(spelling)
            if len(positional) > index and len(positional) > 3:
                at = args.index(positional[index])
                if not args[at].value.deep_equals(value):
                    args[at] = args[at].with_changes(value=value)
                    changed = True
                continue
            existing = next(
                (
                    i
                    for i, a in enumerate(args)
                    if a.keyword is not None and a.keyword.value == keyword
                ),
                None,
            )
            new = cst.Arg(value, keyword=cst.Name(keyword), equal=assign_equal())
            if existing is not None:
                if not args[existing].value.deep_equals(value):
                    args[existing] = args[existing].with_changes(value=value)
                    changed = True
            elif len(positional) > index:
                args[args.index(positional[index])] = new
                changed = True
            else:
                args.insert(index, new)
                changed = True
        if not changed:
            return call
        self.require_import(XR)
        self.record_rewrite()
        return call.with_changes(
            args=with_commas(args), whitespace_before_args=cst.SimpleWhitespace("")
        )
