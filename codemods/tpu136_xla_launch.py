"""TPU136: processes are started with torch_xla.launch (split off from TPU108)."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from migrate.fastcst.traversal import visit_without_copying
from ._base import (
    TORCH_XLA,
    FindingDoc,
    Invalid,
    Safety,
    TpuCodemod,
    Valid,
    code_of,
    statement_call,
)
from ._distributed import (
    INIT_PROCESS_GROUP,
    LaysOutRebuiltCalls,
    assign_equal,
    is_empty_tuple,
    is_main_guard,
    is_true,
    with_commas,
    with_globals_first,
)
from ._statements import AppliesStatementEdits, Replacement

MP_SPAWN = ("torch.multiprocessing.spawn", "torch.multiprocessing.spawn.spawn")
SPAWN_PARAMETERS = ("fn", "args", "nprocs", "join", "daemon", "start_method")
MP_FN = "_mp_fn"


class XlaLaunch(LaysOutRebuiltCalls, AppliesStatementEdits, TpuCodemod):
    """
    What it does
        Starts the training processes with ``torch_xla.launch``:

        - ``mp.spawn(fn, args=(...), nprocs=n)`` -> ``torch_xla.launch(fn, args=(...),
          debug_single_process=n == 1)`` (``start_method`` kept; ``join=False`` left alone).
        - A torchrun-style entry point, ``if __name__ == "__main__": main(...)`` where ``main``
          (directly or through other functions of the file) calls ``init_process_group``, gets a
          ``_mp_fn(index, ...)`` that calls it, launched with ``torch_xla.launch(_mp_fn, ...)``.
        - A module-level ``device = torch_xla.device()`` moves into each launched function (as
          a ``global``); one made in the ``__main__`` block and passed on is reported (TPU205).

        Split off from TPU108, which still names it.

    Why
        torchrun and ``mp.spawn`` start one process per GPU; on TPU, ``torch_xla.launch`` starts
        one per XLA device and sets up PJRT's runtime in each. Touching the XLA runtime before
        ``launch`` (``torch_xla.device()`` at import time) is an error: the parent would own the
        devices its workers need.

    Semantics changes
        Launched functions receive the process index first, like ``mp.spawn``. A script started
        with plain ``python`` runs one process per TPU device of the host rather than one.

    Example
        Before::

            if __name__ == "__main__":
                mp.spawn(main_worker, args=(cfg,), nprocs=ngpus)

        After::

            import torch_xla

            if __name__ == "__main__":
                torch_xla.launch(main_worker, args=(cfg,), debug_single_process=ngpus == 1)
    """

    CODE = "TPU136"
    NAME = "xla-launch"
    SUMMARY = "mp.spawn and torchrun entry points -> torch_xla.launch, the device made in each"
    SAFETY = Safety.SEMANTIC
    FINDINGS = {
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
    TRIGGERS = ("spawn", "launch", "init_process_group")

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(*MP_SPAWN, *INIT_PROCESS_GROUP, "torch_xla")

    VALID = [
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
            'def main():\n    train()\n\n\nif __name__ == "__main__":\n    main()\n',
            why="no distributed setup: nothing to launch",
        ),
    ]
    INVALID = [
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
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._launched: list[str] = []  # names of functions handed to torch_xla.launch
        self._main_block: cst.If | None = None
        self._entry_call: cst.SimpleStatementLine | None = None
        self._module_devices: list[cst.SimpleStatementLine] = []  # NAME = torch_xla.device()

    # ----------------------------------------------------------------- whole-file analysis
    def visit_Module(self, node: cst.Module) -> None:
        functions = {s.name.value: s for s in node.body if isinstance(s, cst.FunctionDef)}
        self._main_block = next((s for s in node.body if is_main_guard(s)), None)
        self._module_devices = [
            s
            for s in node.body
            if isinstance(s, cst.SimpleStatementLine)
            and self._gets_device(s)
            and isinstance(s.body[0].targets[0].target, cst.Name)
        ]
        spawned = self._spawned_functions(node)
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
    def statement_left(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if original in self._module_devices and self._launched:
            self.edits.remove(original)
            self.record_rewrite()
        if original is self._entry_call:
            self._launch_entry_point(original, updated)
        return updated

    def visit_If(self, node: cst.If) -> None:
        if node is self._main_block and self._launched:
            for statement in node.body.body:
                if isinstance(statement, cst.SimpleStatementLine) and self._gets_device(statement):
                    self.flag(statement, "TPU205", self.finding_doc("TPU205").summary)

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

    # ----------------------------------------------------------------- mp.spawn
    def rebuilt_call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if self.is_name(original.func, *MP_SPAWN) and self._spawn_is_portable(original):
            self.release_binding(original.func)
            return self._launch(updated)
        return updated

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
        values: dict[str, cst.BaseExpression] = {}
        for position, argument in enumerate(call.args):
            name = argument.keyword.value if argument.keyword else SPAWN_PARAMETERS[position]
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
