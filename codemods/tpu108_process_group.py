"""TPU108: NCCL/gloo process groups become the XLA backend."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ParentNodeProvider, ScopeProvider

from migrate.fastcst.facts import FileFacts
from migrate.fastcst.traversal import visit_without_copying
from ._base import ImportSpec, Invalid, Safety, TpuCodemod, Valid
from ._distributed import (
    INIT_PROCESS_GROUP,
    LaysOutRebuiltCalls,
    assign_equal,
    backend_argument,
    string_value,
    with_commas,
)
from ._statements import AppliesStatementEdits

XLA_BACKEND = ImportSpec("torch_xla.distributed.xla_backend")
# init_process_group arguments the xla backend does not take: PJRT supplies rank, world size and
# the rendezvous; a CUDA device_id has no meaning on XLA.
DROPPED_INIT_KEYWORDS = frozenset(
    {"backend", "init_method", "rank", "world_size", "store", "device_id"}
)
CUDA_BACKENDS = frozenset({"nccl", "gloo", "cpu:gloo,cuda:nccl"})


class ProcessGroup(LaysOutRebuiltCalls, AppliesStatementEdits, TpuCodemod):
    """
    What it does
        ``dist.init_process_group("nccl" | "gloo", ...)`` (the backend positional or
        ``backend=``, also a ``backend`` variable holding those strings, or a conditional
        expression choosing between them) becomes ``dist.init_process_group("xla",
        init_method="xla://")``, plus ``import torch_xla.distributed.xla_backend``, which
        registers the backend. ``rank``, ``world_size``, ``init_method``, ``store`` and
        ``device_id`` are dropped (PJRT supplies them), other keywords such as ``timeout`` are
        kept. A ``backend = "nccl"`` variable used nowhere else is removed.

        TPU108 was one rule for all of torch.distributed; its other parts are rules of their
        own, which ``TPU108`` still names in ``--select``, ``--ignore`` and suppressions:
        TPU131 (rank and world size from ``torch_xla.runtime``), TPU132 (DDP's arguments),
        TPU133 (``DistributedSampler``'s replicas), TPU134 (``torch.cuda.set_device`` removed),
        TPU135 (``nn.DataParallel`` removed) and TPU136 (``mp.spawn`` and torchrun entry points
        -> ``torch_xla.launch``).

    Why
        NCCL and gloo do not run on TPU: the ``xla`` backend makes DDP's collectives XLA
        all-reduces, and PJRT's rendezvous (``xla://``) replaces the torchrun environment
        (under ``torch_xla.launch`` RANK and WORLD_SIZE are not set at all).

    Semantics changes
        Rank and world size come from the XLA runtime, not from the arguments or the
        environment. With DDP, ``optimizer.step()`` stays plain (TPU102): DDP already averages
        the gradients.

    Example
        Before::

            dist.init_process_group("nccl", init_method="env://", rank=rank, world_size=world)

        After::

            import torch_xla.distributed.xla_backend

            dist.init_process_group("xla", init_method="xla://")
    """

    CODE = "TPU108"
    NAME = "xla-process-group"
    SUMMARY = "NCCL/gloo init_process_group -> the xla backend with PJRT's xla:// rendezvous"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("init_process_group",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(*INIT_PROCESS_GROUP)

    VALID = [
        Valid(
            "import torch.distributed as dist\nimport torch_xla.distributed.xla_backend\n\n"
            'dist.init_process_group("xla", init_method="xla://")\n',
            why="already the xla backend",
        ),
        Valid(
            'import torch.distributed as dist\n\ndist.init_process_group("mpi")\n',
            why="not a CUDA backend: a deliberate choice, left alone",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch.distributed as dist\n\n"
            'dist.init_process_group("nccl", init_method="env://", rank=rank, world_size=world)\n',
            "import torch.distributed as dist\nimport torch_xla.distributed.xla_backend\n\n"
            'dist.init_process_group("xla", init_method="xla://")\n',
        ),
        Invalid(
            "import datetime\nimport torch.distributed as dist\n\n"
            "dist.init_process_group(backend='gloo', timeout=datetime.timedelta(minutes=5))\n",
            "import datetime\nimport torch.distributed as dist\nimport torch_xla.distributed.xla_backend\n\n"
            'dist.init_process_group("xla", init_method="xla://", '
            "timeout=datetime.timedelta(minutes=5))\n",
            why="timeout is kept",
        ),
        Invalid(
            "import torch.distributed as dist\n\n"
            'backend = "nccl"\ndist.init_process_group(backend)\nprint("backend:", backend)\n',
            "import torch.distributed as dist\nimport torch_xla.distributed.xla_backend\n\n"
            'backend = "nccl"\ndist.init_process_group("xla", init_method="xla://")\n'
            'print("backend:", backend)\n',
            why="the variable is used elsewhere, so it stays",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._removed_backend_names: set[int] = set()

    def visit_Module(self, node: cst.Module) -> None:
        rule = self

        class InitFinder(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                if rule.is_name(call.func, *INIT_PROCESS_GROUP):
                    rule._plan_backend_variable_removal(call)

        visit_without_copying(node, InitFinder())

    def statement_left(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        removed = {id(old) for old in original.body if id(old) in self._removed_backend_names}
        return self.edits.remove_small_statements(original, updated, removed)

    def rebuilt_call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if not self.is_name(original.func, *INIT_PROCESS_GROUP):
            return updated
        backend = backend_argument(updated)
        if backend is None or string_value(backend.value) == "xla":
            return updated
        if not self._is_cuda_backend(original, backend_argument(original).value):
            return updated
        kept = [
            a
            for a in updated.args[1 if updated.args[0].keyword is None else 0 :]
            if a.keyword is None or a.keyword.value not in DROPPED_INIT_KEYWORDS
        ]
        kept = [a for a in kept if a.keyword is not None]  # positional ones were backend, ...
        new_args = [
            cst.Arg(cst.SimpleString('"xla"')),
            cst.Arg(
                cst.SimpleString('"xla://"'), keyword=cst.Name("init_method"), equal=assign_equal()
            ),
            *[a.with_changes(equal=assign_equal(), comma=cst.MaybeSentinel.DEFAULT) for a in kept],
        ]
        self.require_import(XLA_BACKEND)
        self.record_rewrite()
        return updated.with_changes(
            args=with_commas(new_args), whitespace_before_args=cst.SimpleWhitespace("")
        )

    def _is_cuda_backend(self, call: cst.Call, value: cst.BaseExpression) -> bool:
        if string_value(value) in CUDA_BACKENDS:
            return True
        if isinstance(value, cst.IfExp):
            return all(string_value(v) in CUDA_BACKENDS for v in (value.body, value.orelse))
        if isinstance(value, cst.Name):
            assignments = self._assignments_of(value)
            return bool(assignments) and all(
                isinstance(a, cst.Assign) and self._is_cuda_backend(call, a.value)
                for a in assignments
            )
        return False

    def _assignments_of(self, name: cst.Name) -> list[cst.CSTNode]:
        try:
            scope = self.get_metadata(ScopeProvider, name)
        except KeyError:
            return []
        nodes = []
        for assignment in scope.assignments[name.value]:
            node = getattr(assignment, "node", None)
            parent = (
                node
                if isinstance(node, cst.Assign)
                else self.get_metadata(ParentNodeProvider, node, None)
            )
            while parent is not None and not isinstance(parent, (cst.Assign, cst.BaseStatement)):
                parent = self.get_metadata(ParentNodeProvider, parent, None)
            nodes.append(parent)
        return nodes

    def _plan_backend_variable_removal(self, call: cst.Call) -> None:
        argument = backend_argument(call)
        if argument is None or not isinstance(argument.value, cst.Name):
            return
        if not self._is_cuda_backend(call, argument.value):
            return
        scope = self.get_metadata(ScopeProvider, argument.value)
        assignments = scope.assignments[argument.value.value]
        accesses = scope.accesses[argument.value.value]
        if len(assignments) != 1 or len(accesses) != 1:
            return
        assign = self._assignments_of(argument.value)[0]
        if isinstance(assign, cst.Assign) and len(assign.targets) == 1:
            self._removed_backend_names.add(id(assign))
