"""TPU108: port torch.distributed / multiprocessing training to the XLA backend and torch_xla.launch."""

from __future__ import annotations

from typing import Union

import libcst as cst
import libcst.matchers as m
from libcst.metadata import ParentNodeProvider, ScopeProvider

from migrate.fastcst.facts import FileFacts
from ._base import (
    TORCH_XLA,
    XR,
    FindingDoc,
    ImportSpec,
    Invalid,
    Safety,
    TpuCodemod,
    Valid,
    code_of,
    statement_call,
    walk_all,
)
from ._distributed import (
    is_main_guard,
    backend_argument,
    string_value,
    literal_text,
    is_true,
    is_empty_tuple,
    is_to_call_on,
    env_root,
    assign_equal,
    with_commas,
    with_globals_first,
    one_indented_line,
    one_argument_per_line,
)
from ._statements import AppliesStatementEdits, Replacement
from migrate.fastcst.traversal import visit_without_copying

XLA_BACKEND = ImportSpec("torch_xla.distributed.xla_backend")
INIT_PROCESS_GROUP = ("torch.distributed.init_process_group",)
DDP = (
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
)
DATA_PARALLEL = (
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
)
DISTRIBUTED_SAMPLER = (
    "torch.utils.data.DistributedSampler",
    "torch.utils.data.distributed.DistributedSampler",
)
MP_SPAWN = ("torch.multiprocessing.spawn", "torch.multiprocessing.spawn.spawn")
SET_DEVICE = ("torch.cuda.set_device",)
# init_process_group arguments the xla backend does not take: PJRT supplies rank, world size and
# the rendezvous; a CUDA device_id has no meaning on XLA.
DROPPED_INIT_KEYWORDS = frozenset(
    {"backend", "init_method", "rank", "world_size", "store", "device_id"}
)
# DistributedDataParallel(module, device_ids, output_device, ...): the CUDA-only arguments.
DROPPED_DDP_KEYWORDS = frozenset({"device_ids", "output_device"})
CUDA_BACKENDS = frozenset({"nccl", "gloo", "cpu:gloo,cuda:nccl"})

# torch.distributed query (no arguments) -> torch_xla.runtime call.
RUNTIME_QUERIES: dict[str, str] = {
    "torch.distributed.get_rank": "xr.global_ordinal()",
    "torch.distributed.get_world_size": "xr.world_size()",
}
# Environment variable set by torchrun -> (torch_xla.runtime call, defaults that mean the same).
ENV_QUERIES: dict[str, tuple[str, frozenset[str]]] = {
    "RANK": ("xr.global_ordinal()", frozenset({"0"})),
    "LOCAL_RANK": ("xr.local_ordinal()", frozenset({"0"})),
    "WORLD_SIZE": ("xr.world_size()", frozenset({"1"})),
}
# DistributedSampler(dataset, num_replicas, rank, ...): the values the XLA runtime knows.
SAMPLER_ARGUMENTS: tuple[tuple[str, str], ...] = (
    ("num_replicas", "xr.world_size()"),
    ("rank", "xr.global_ordinal()"),
)
MP_FN = "_mp_fn"
MAX_LINE = 100

Statement = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]


class Distributed(AppliesStatementEdits, TpuCodemod):
    """
    What it does
        Ports CUDA data-parallel training to torch_xla's multi-process data parallelism:

        - ``dist.init_process_group("nccl" | "gloo", ...)`` (positional or ``backend=``, also a
          ``backend`` variable holding those strings) -> ``dist.init_process_group("xla",
          init_method="xla://")`` plus ``import torch_xla.distributed.xla_backend``; ``rank``,
          ``world_size``, ``init_method``, ``store`` and ``device_id`` are dropped (PJRT supplies
          them); a ``backend = "nccl"`` variable used nowhere else is removed.
        - ``DDP(model, device_ids=[...], output_device=...)`` -> ``DDP(model,
          gradient_as_bucket_view=True)`` (other keywords kept); a ``.to(device)`` on the DDP
          wrapper is dropped (the wrapped model is already on the device).
        - ``dist.get_rank()`` / ``dist.get_world_size()`` (default group) and
          ``int(os.environ["RANK"])``, ``int(os.environ.get("WORLD_SIZE", 1))``,
          ``int(os.getenv("LOCAL_RANK", "0"))`` -> ``xr.global_ordinal()`` / ``xr.world_size()``
          / ``xr.local_ordinal()``. An environment default other than the single-process value
          (``LOCAL_RANK`` default ``-1`` meaning "not distributed") is left alone.
        - ``DistributedSampler(ds, ...)`` gets ``num_replicas=xr.world_size(),
          rank=xr.global_ordinal()``.
        - ``mp.spawn(fn, args=(...), nprocs=n)`` -> ``torch_xla.launch(fn, args=(...),
          debug_single_process=n == 1)`` (``start_method`` kept; ``join=False`` left alone).
        - A torchrun-style entry point, ``if __name__ == "__main__": main(...)`` where ``main``
          (directly or through other functions of the file) calls ``init_process_group``, gets a
          ``_mp_fn(index, ...)`` that calls it, launched with ``torch_xla.launch(_mp_fn, ...)``.
          A module-level ``device = torch_xla.device()`` moves into the launched function (as a
          ``global``), because touching the XLA runtime before ``launch`` is an error.
        - ``torch.cuda.set_device(...)`` is removed; ``nn.DataParallel(model)`` becomes ``model``
          with a finding (TPU203).

    Why
        NCCL and gloo do not run on TPU: the ``xla`` backend makes DDP's collectives XLA
        all-reduces, and PJRT's rendezvous replaces the torchrun environment (under
        ``torch_xla.launch`` RANK and WORLD_SIZE are not set at all). ``device_ids`` name CUDA
        devices; each launched process owns one XLA device. ``gradient_as_bucket_view=True`` is
        what every torch_xla DDP example passes (it saves a copy of the gradients).
        ``DataParallel`` (one process, many GPUs) has no XLA equivalent: data parallelism on TPU
        is one process per device (``torch_xla.launch``) or SPMD.

    Semantics changes
        Launched functions receive the process index first, like ``mp.spawn``. Rank and world size
        come from the XLA runtime, so a script started with plain ``python`` runs as every TPU
        device of the host rather than as a world of one. With DDP, ``optimizer.step()`` stays
        plain (TPU102): DDP already averages the gradients.

    Example
        Before::

            dist.init_process_group("nccl", init_method="env://", rank=rank, world_size=world)
            model = DDP(model, device_ids=[local_rank])
            sampler = DistributedSampler(dataset)
            mp.spawn(main_worker, args=(cfg,), nprocs=ngpus)

        After::

            import torch_xla.distributed.xla_backend
            import torch_xla.runtime as xr

            dist.init_process_group("xla", init_method="xla://")
            model = DDP(model, gradient_as_bucket_view=True)
            sampler = DistributedSampler(
                dataset, num_replicas=xr.world_size(), rank=xr.global_ordinal()
            )
            torch_xla.launch(main_worker, args=(cfg,), debug_single_process=ngpus == 1)
    """

    CODE = "TPU108"
    NAME = "distributed"
    SUMMARY = "Port NCCL/gloo DDP, torchrun and mp.spawn to the XLA backend and torch_xla.launch"
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
        "TPU205": FindingDoc(
            "the XLA device is used before torch_xla.launch: move it into the launched function",
            why="The first XLA call starts the runtime in the parent process; torch_xla.launch "
            "then fails with 'Runtime is already initialized' or the workers cannot get their "
            "own device.",
            what_to_do="Move torch_xla.device() and every other XLA call (models moved to the "
            "device, xm/xr queries) into the function that torch_xla.launch starts; the parent "
            "should only parse arguments and launch.",
        ),
    }
    TRIGGERS = (
        "distributed",
        "DistributedSampler",
        "multiprocessing",
        "DataParallel",
        "RANK",
        "WORLD_SIZE",
        "set_device",
    )

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(
            *INIT_PROCESS_GROUP,
            *DDP,
            *DATA_PARALLEL,
            *DISTRIBUTED_SAMPLER,
            *MP_SPAWN,
            *SET_DEVICE,
            *RUNTIME_QUERIES,
            "torch_xla",
        ) or (facts.uses("os") and facts.has_string(lambda s: s in ENV_QUERIES))

    VALID = [
        Valid(
            "import torch.distributed as dist\nimport torch_xla.distributed.xla_backend\n\n"
            'dist.init_process_group("xla", init_method="xla://")\n',
            why="already the xla backend",
        ),
        Valid(
            'import os\n\nlocal_rank = int(os.environ.get("LOCAL_RANK", -1))\n'
            "distributed = local_rank != -1\n",
            why="-1 means 'not launched distributed'; the runtime would always say 0",
        ),
        Valid(
            "import torch.distributed as dist\n\nrank = dist.get_rank(group=subgroup)\n",
            why="a rank within a sub-group is not the global ordinal",
        ),
        Valid(
            "import torch.multiprocessing as mp\n\nmp.spawn(worker, nprocs=2, join=False)\n",
            why="torch_xla.launch always joins; left for a human",
        ),
        Valid(
            "class Pool:\n    def spawn(self, fn, nprocs):\n        pass\n\n"
            "mp = Pool()\nmp.spawn(worker, nprocs=4)\n",
            why="a look-alike spawn is not torch.multiprocessing",
        ),
        Valid(
            'import os\n\nrank = os.environ["RANK"]\nprint("rank", rank)\n',
            why="the string value is not converted to an int: not a rank computation to port",
        ),
        Valid(
            "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
            "model = DDP(model, gradient_as_bucket_view=True)\n",
            why="already the XLA form",
        ),
        Valid(
            'def main():\n    train()\n\n\nif __name__ == "__main__":\n    main()\n',
            why="no distributed setup: nothing to launch",
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
        Invalid(
            "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
            "model = DDP(model, device_ids=[local_rank], output_device=local_rank)\n",
            "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
            "model = DDP(model, gradient_as_bucket_view=True)\n",
        ),
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
        Invalid(
            "import torch.multiprocessing as mp\n\n"
            'if __name__ == "__main__":\n'
            "    mp.spawn(main_worker, nprocs=args.world_size, args=(args,))\n",
            "import torch_xla\n\n"
            'if __name__ == "__main__":\n'
            "    torch_xla.launch(main_worker, args=(args,), "
            "debug_single_process=args.world_size == 1)\n",
        ),
        Invalid(
            "import torch.multiprocessing as mp\n\n"
            'mp.spawn(train, args=(cfg, data), nprocs=1, start_method="fork")\n'
            "mp.spawn(train)\n",
            "import torch_xla\n\n"
            'torch_xla.launch(train, args=(cfg, data), start_method="fork", '
            "debug_single_process=True)\n"
            "torch_xla.launch(train)\n",
        ),
        Invalid(
            "import torch\n\n"
            "def main_worker(gpu, args):\n"
            "    torch.cuda.set_device(gpu)\n"
            "    train(args, torch.float32)\n",
            "import torch\n\n" "def main_worker(gpu, args):\n" "    train(args, torch.float32)\n",
        ),
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
        Invalid(
            "import torch.distributed as dist\n\n\ndef info(group):\n"
            '    return {"backend": f"{dist.get_backend(group)}", '
            '"world_size": f"{dist.get_world_size()}", "group": str(group)}\n',
            "import torch.distributed as dist\nimport torch_xla.runtime as xr\n\n\n"
            'def info(group):\n    return {"backend": f"{dist.get_backend(group)}", '
            '"world_size": f"{xr.world_size()}", "group": str(group)}\n',
            why="a line still long after the rewrite, whose new call has no argument to wrap "
            "(torch's distributed/c10d_logger.py crashed the rule)",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._launched: list[str] = []  # names of functions handed to torch_xla.launch
        self._main_block: cst.If | None = None
        self._entry_call: cst.SimpleStatementLine | None = None
        self._module_devices: list[cst.SimpleStatementLine] = []  # NAME = torch_xla.device()
        self._removed_backend_names: set[int] = set()
        self._built_calls: list[cst.Call] = []  # calls this rule rebuilt: wrapped if too long

    # ----------------------------------------------------------------- whole-file analysis
    def visit_Module(self, node: cst.Module) -> None:
        self._plan_entry_point(node)
        rule = self

        class InitFinder(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                if rule.is_name(call.func, *INIT_PROCESS_GROUP):
                    rule._plan_backend_variable_removal(call)

        visit_without_copying(node, InitFinder())

    def _plan_entry_point(self, module: cst.Module) -> None:
        functions = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
        self._main_block = next((s for s in module.body if is_main_guard(s)), None)
        self._module_devices = [
            s
            for s in module.body
            if isinstance(s, cst.SimpleStatementLine)
            and self._gets_device(s)
            and isinstance(s.body[0].targets[0].target, cst.Name)
        ]
        spawned = self._spawned_functions(module)
        self._launched = [name for name in spawned if name in functions]
        if self._main_block is None or spawned or MP_FN in functions:
            return
        initializing = self._functions_reaching_init(functions)
        for statement in self._main_block.body.body:
            call = statement_call(statement)
            if (
                call is not None
                and isinstance(call.func, cst.Name)
                and call.func.value in initializing
                and all(
                    a.keyword is None and not a.star and isinstance(a.value, cst.Name)
                    for a in call.args
                )
            ):
                self._entry_call = statement
                self._launched.append(MP_FN)
                return

    def _spawned_functions(self, module: cst.Module) -> list[str]:
        """Names of the functions started by a portable ``mp.spawn`` (or already by
        ``torch_xla.launch``) anywhere in the file; a non-name target counts as ``""``."""
        found: list[str] = []

        class Finder(cst.CSTVisitor):
            def visit_Call(inner, node: cst.Call) -> None:  # noqa: N805
                if self.is_name(node.func, "torch_xla.launch") or (
                    self.is_name(node.func, *MP_SPAWN) and self._spawn_is_portable(node)
                ):
                    target = node.args[0].value if node.args else None
                    found.append(target.value if isinstance(target, cst.Name) else "")

        visit_without_copying(module, Finder())
        return found

    def _moves_devices(self) -> bool:
        return bool(self._module_devices and self._launched)

    def _device_moves(self) -> list[tuple[str, cst.BaseExpression]]:
        return [(s.body[0].targets[0].target.value, s.body[0].value) for s in self._module_devices]

    def _functions_reaching_init(self, functions: dict[str, cst.FunctionDef]) -> set[str]:
        calls: dict[str, set[str]] = {}
        direct: set[str] = set()
        for name, function in functions.items():
            called: set[str] = set()
            inits = []

            class Collector(cst.CSTVisitor):
                def visit_Call(inner, node: cst.Call) -> None:  # noqa: N805
                    if isinstance(node.func, cst.Name):
                        called.add(node.func.value)
                    if self.is_name(node.func, *INIT_PROCESS_GROUP):
                        inits.append(node)

            visit_without_copying(function, Collector())
            calls[name] = called
            if inits:
                direct.add(name)
        reaching = set(direct)
        changed = True
        while changed:
            changed = False
            for name, called in calls.items():
                if name not in reaching and called & reaching:
                    reaching.add(name)
                    changed = True
        return reaching

    def _gets_device(self, statement: cst.SimpleStatementLine) -> bool:
        return (
            len(statement.body) == 1
            and isinstance(statement.body[0], cst.Assign)
            and isinstance(statement.body[0].value, cst.Call)
            and self.is_name(statement.body[0].value.func, "torch_xla.device")
        )

    # ----------------------------------------------------------------- statements
    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        updated_node = self._wrapped_if_long(original_node, updated_node)
        removed: set[int] = set()
        for old, new in zip(original_node.body, updated_node.body):
            if isinstance(old, cst.Expr) and isinstance(old.value, cst.Call):
                if self.is_name(old.value.func, *SET_DEVICE):
                    removed.add(id(old))
                    self.release_binding(old.value.func)
                    self.record_rewrite()
            if isinstance(old, cst.Assign) and self._is_data_parallel_self_wrap(old):
                removed.add(id(old))
                self._flag_data_parallel(old.value, self._next_statement(original_node))
            if id(old) in self._removed_backend_names:
                removed.add(id(old))
        if original_node in self._module_devices and self._launched:
            self.edits.remove(original_node)
            self.record_rewrite()
        if original_node is self._entry_call:
            self._launch_entry_point(original_node, updated_node)
            return updated_node
        return self.edits.remove_small_statements(original_node, updated_node, removed)

    def _wrapped_if_long(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        """Black's layout for a call this rule rebuilt when its line passes ``MAX_LINE``."""
        if not self._built_calls:
            return updated
        indent = 4 * self._depth(original)
        code = code_of(updated.with_changes(leading_lines=()))
        if all(indent + len(line) <= MAX_LINE for line in code.splitlines()):
            return updated
        # one walk of the statement, not one per call built so far (a file with hundreds of
        # them made this quadratic)
        inside = {id(node) for node in walk_all(updated)}
        calls = [c for c in self._built_calls if id(c) in inside]
        self._built_calls = [c for c in self._built_calls if c not in calls]
        calls = [c for c in calls if c.args]  # ``xr.world_size()`` has nothing to wrap
        if not calls:
            return updated
        call = calls[-1]  # the outermost: built last
        for wrapped in (one_indented_line(call, indent), one_argument_per_line(call, indent)):
            candidate = updated.deep_replace(call, wrapped)
            text = code_of(candidate.with_changes(leading_lines=()))
            if all(indent + len(line) <= MAX_LINE for line in text.splitlines()):
                return candidate
        return candidate

    def _depth(self, node: cst.CSTNode) -> int:
        depth = 0
        current = self.get_metadata(ParentNodeProvider, node, None)
        while current is not None:
            if isinstance(current, cst.IndentedBlock):
                depth += 1
            current = self.get_metadata(ParentNodeProvider, current, None)
        return depth

    def visit_If(self, node: cst.If) -> None:
        if node is self._main_block and self._launched:
            for statement in node.body.body:
                if isinstance(statement, cst.SimpleStatementLine) and self._gets_device(statement):
                    self.flag(statement, "TPU205", self.finding_doc("TPU205").summary)

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

    # ----------------------------------------------------------------- entry point
    def _launch_entry_point(self, original: cst.SimpleStatementLine, updated) -> None:
        call = statement_call(original)
        names = [a.value.value for a in call.args]
        parameters = ", ".join(["index", *names])
        function = cst.parse_statement(
            f"def {MP_FN}({parameters}):\n    {call.func.value}({', '.join(names)})\n"
        )
        function = function.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        if self._moves_devices():
            function = with_globals_first(function, self._device_moves())
        self.edits.insert_before(self._main_block, function)
        launch_args = f", args=({', '.join(names)},)" if names else ""
        launch = cst.parse_statement(f"torch_xla.launch({MP_FN}{launch_args})\n")
        self.edits.replace(original, Replacement((launch,), leading=tuple(updated.leading_lines)))
        self.require_import(TORCH_XLA)
        self.record_rewrite()

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        if self._moves_devices() and original_node.name.value in self._launched:
            return with_globals_first(updated_node, self._device_moves())
        return updated_node

    # ----------------------------------------------------------------- calls
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        result = self._rewritten_call(original_node, updated_node)
        if isinstance(result, cst.Call) and result is not updated_node:
            self._built_calls.append(result)
        return result

    def _rewritten_call(
        self, original_node: cst.Call, updated_node: cst.Call
    ) -> cst.BaseExpression:
        func = original_node.func
        if self.is_name(func, *INIT_PROCESS_GROUP):
            return self._xla_process_group(original_node, updated_node)
        if self.is_name(func, *DDP):
            return self._xla_ddp(updated_node)
        if self.is_name(func, *DISTRIBUTED_SAMPLER):
            return self._runtime_sampler(updated_node)
        if self.is_name(func, *MP_SPAWN) and self._spawn_is_portable(original_node):
            self.release_binding(func)
            return self._launch(updated_node)
        if self.is_name(func, *RUNTIME_QUERIES) and not original_node.args:
            (qname,) = self.qualified_names(func) & set(RUNTIME_QUERIES)
            return self._runtime_call(RUNTIME_QUERIES[qname])
        env = self._env_query(original_node)
        if env is not None:
            self.release_binding(env_root(original_node))
            return self._runtime_call(env)
        if self.is_name(func, *DATA_PARALLEL) and not self._is_wrapped_self_assignment(
            original_node
        ):
            self._flag_data_parallel(original_node, original_node)
            return updated_node.args[0].value if updated_node.args else updated_node
        if is_to_call_on(updated_node) and self._is_ddp_call(original_node.func.value):
            self.record_rewrite()
            return updated_node.func.value
        return updated_node

    def _runtime_call(self, spelling: str) -> cst.BaseExpression:
        self.require_import(XR)
        self.record_rewrite()
        return cst.parse_expression(spelling)

    # init_process_group
    def _xla_process_group(self, original: cst.Call, updated: cst.Call) -> cst.Call:
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

    # DDP
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

    # DistributedSampler
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

    # mp.spawn
    def _spawn_is_portable(self, call: cst.Call) -> bool:
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        join = keywords.get("join")
        return (
            bool(call.args)
            and not any(a.star for a in call.args)
            and len([a for a in call.args if a.keyword is None]) <= 3
            and (join is None or is_true(join))
        )

    def _launch(self, call: cst.Call) -> cst.Call:
        spawn_parameters = ("fn", "args", "nprocs", "join", "daemon", "start_method")
        values: dict[str, cst.BaseExpression] = {}
        for position, argument in enumerate(call.args):
            name = argument.keyword.value if argument.keyword else spawn_parameters[position]
            values[name] = argument.value
        new_args = [cst.Arg(values["fn"])]
        if "args" in values and not is_empty_tuple(values["args"]):
            new_args.append(cst.Arg(values["args"], keyword=cst.Name("args"), equal=assign_equal()))
        if "start_method" in values:
            new_args.append(
                cst.Arg(
                    values["start_method"], keyword=cst.Name("start_method"), equal=assign_equal()
                )
            )
        if "nprocs" in values:
            nprocs = values["nprocs"]
            single = (
                cst.Name("True")
                if isinstance(nprocs, cst.Integer) and nprocs.value == "1"
                else cst.parse_expression(f"{code_of(nprocs)} == 1")
            )
            new_args.append(
                cst.Arg(single, keyword=cst.Name("debug_single_process"), equal=assign_equal())
            )
        self.require_import(TORCH_XLA)
        self.record_rewrite()
        return cst.Call(func=cst.parse_expression("torch_xla.launch"), args=with_commas(new_args))

    # environment
    def _env_query(self, call: cst.Call) -> str | None:
        if not (
            isinstance(call.func, cst.Name) and call.func.value == "int" and len(call.args) == 1
        ):
            return None
        inner = call.args[0].value
        key: cst.BaseExpression | None = None
        default: cst.BaseExpression | None = None
        if isinstance(inner, cst.Subscript) and self.is_name(inner.value, "os.environ"):
            if len(inner.slice) == 1 and isinstance(inner.slice[0].slice, cst.Index):
                key = inner.slice[0].slice.value
        elif isinstance(inner, cst.Call) and (
            self.is_name(inner.func, "os.getenv")
            or (
                isinstance(inner.func, cst.Attribute)
                and inner.func.attr.value == "get"
                and self.is_name(inner.func.value, "os.environ")
            )
        ):
            if 1 <= len(inner.args) <= 2 and all(a.keyword is None for a in inner.args):
                key = inner.args[0].value
                default = inner.args[1].value if len(inner.args) == 2 else None
        variable = string_value(key) if key is not None else None
        if variable not in ENV_QUERIES:
            return None
        spelling, neutral = ENV_QUERIES[variable]
        if default is not None and literal_text(default) not in neutral:
            return None
        return spelling

    # DataParallel
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


# --------------------------------------------------------------------- helpers
