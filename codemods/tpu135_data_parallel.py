"""TPU135: nn.DataParallel is removed, with a finding (split off from TPU108)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ParentNodeProvider

from migrate.fastcst.facts import FileFacts
from ._base import FindingDoc, Invalid, Safety, TpuCodemod, Valid
from ._distributed import LaysOutRebuiltCalls
from ._statements import AppliesStatementEdits

DATA_PARALLEL = (
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
)


class DataParallel(LaysOutRebuiltCalls, AppliesStatementEdits, TpuCodemod):
    """
    What it does
        ``nn.DataParallel(model, ...)`` becomes ``model``, and ``model = nn.DataParallel(model)``
        is removed, with a TPU203 finding (on the statement after it when the statement goes).
        Split off from TPU108, which still names it.

    Why
        ``DataParallel`` (one process driving several GPUs with threads) has no XLA equivalent:
        data parallelism on TPU is one process per device (``torch_xla.launch``) or SPMD.
        Without the wrapper the model trains on one device, which is what the finding says.

    Example
        Before::

            net = torch.nn.DataParallel(Net(), device_ids=[0, 1]).to(device)

        After::

            # TODO(tpu-migrate): TPU203 nn.DataParallel removed: data parallelism on TPU is ...
            net = Net().to(device)
    """

    CODE = "TPU135"
    NAME = "data-parallel"
    SUMMARY = "nn.DataParallel(model) -> model, with a finding: XLA has no one-process multi-device"
    SAFETY = Safety.SEMANTIC
    FINDINGS = {
        "TPU203": FindingDoc(
            "nn.DataParallel removed: data parallelism on TPU is one process per device "
            "(torch_xla.launch) or SPMD",
            why="nn.DataParallel drives several GPUs from one process with threads and splits "
            "each batch between them; torch_xla has no such mode. Without it the script trains "
            "on one device, with the whole batch on that device.",
            what_to_do="For several devices start one process per device with "
            "torch_xla.launch(_mp_fn), give each a DistributedSampler so that it sees its own "
            "part of the data, and let xm.optimizer_step(opt) all-reduce the gradients; or "
            "shard with SPMD. Check the batch size and learning rate: each process now has "
            "its own batch.",
        ),
    }
    TRIGGERS = ("DataParallel",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(*DATA_PARALLEL)

    VALID = [
        Valid(
            "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
            "model = DDP(model)\n",
            why="DistributedDataParallel is one process per device already",
        ),
        Valid(
            "class DataParallel:\n    def __init__(self, module):\n        self.module = module\n\n\n"
            "model = DataParallel(model)\n",
            why="a class of the user's own",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n"
            "net = torch.nn.DataParallel(Net(), device_ids=[0, 1]).to(device)\n"
            "x = torch.zeros(1)\n",
            "import torch\n\n"
            "# TODO(tpu-migrate): TPU203 nn.DataParallel removed: data parallelism on TPU is one "
            "process per device (torch_xla.launch) or SPMD\n"
            "net = Net().to(device)\nx = torch.zeros(1)\n",
            findings=["TPU203"],
        ),
    ]

    def rebuilt_call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if self.is_name(original.func, *DATA_PARALLEL) and not self._is_wrapped_self_assignment(
            original
        ):
            self._flag_data_parallel(original, original)
            return updated.args[0].value if updated.args else updated
        return updated

    def statement_left(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        removed: set[int] = set()
        for old in original.body:
            if isinstance(old, cst.Assign) and self._is_data_parallel_self_wrap(old):
                removed.add(id(old))
                self._flag_data_parallel(old.value, self._next_statement(original))
        return self.edits.remove_small_statements(original, updated, removed)

    def _is_data_parallel_self_wrap(self, assign: cst.Assign) -> bool:
        value = assign.value
        return (
            isinstance(value, cst.Call)
            and self.is_name(value.func, *DATA_PARALLEL)
            and len(assign.targets) == 1
            and bool(value.args)
            and value.args[0].keyword is None
            and assign.targets[0].target.deep_equals(value.args[0].value)
        )

    def _is_wrapped_self_assignment(self, call: cst.Call) -> bool:
        parent = self.get_metadata(ParentNodeProvider, call, None)
        return isinstance(parent, cst.Assign) and self._is_data_parallel_self_wrap(parent)

    def _flag_data_parallel(self, call: cst.Call, marker_at: cst.CSTNode) -> None:
        self.release_binding(call.func)
        self.record_rewrite()
        self.flag(marker_at, "TPU203", self.finding_doc("TPU203").summary)

    def _next_statement(self, statement: cst.CSTNode) -> cst.CSTNode:
        """Where a marker for ``statement`` goes when ``statement`` itself is removed."""
        block = self.get_metadata(ParentNodeProvider, statement)
        body = list(block.body)
        index = next(i for i, s in enumerate(body) if s is statement)
        if index + 1 < len(body):
            return body[index + 1]
        if isinstance(block, cst.Module):
            return statement
        return self.get_metadata(ParentNodeProvider, block)
