"""TPU109: checkpoints of XLA state with ``xm.save``, called on every rank."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import XM, Invalid, Safety, TpuCodemod, Valid, code_of
from ._checkpoints import SAVE, FollowsAssignments
from ._statements import AppliesStatementEdits, Replacement
from migrate.fastcst.traversal import visit_without_copying

# torch.save's parameter names -> xm.save's.
SAVE_KEYWORDS = {"obj": "data", "f": "file_or_path"}
# Words in a guard that only lets one process through (``if rank == 0``, ``if is_master:``).
RANK_WORDS = ("rank", "ordinal")
MASTER_WORDS = ("master", "main_process", "rank_zero", "rank0")


class Checkpoints(FollowsAssignments, AppliesStatementEdits, TpuCodemod):
    """
    What it does
        - ``torch.save(state, path)`` -> ``xm.save(state, path)`` when ``state`` is model or
          optimizer state: a ``.state_dict()`` call, a dict literal holding one, a variable of
          the same function assigned one of those, or the parameter of a helper (``def
          save_checkpoint(state, filename): torch.save(state, filename)``) that this file calls
          with such a value. Saving other objects (``args``, epoch numbers, whole modules) is
          left alone, as are calls with ``torch.save``-only options (``pickle_protocol=``).
        - A rank-0 guard directly around such a save (``if rank == 0:``, ``if
          dist.get_rank() == 0:``, ``if xr.global_ordinal() == 0:``, ``if
          xm.is_master_ordinal():``, ``if is_master:``, ``if args.rank % ngpus == 0:``, and
          ``not distributed or rank == 0``) is lifted off the save, also off a call of such a
          helper: the save runs on every rank. Other statements under the guard stay guarded
          (the guard is split around the save when needed). Guards with ``else`` and
          conditions that also test something else (``rank == 0 and epoch % 10 == 0``) stay.

        Loading is TPU138's (``torch.load`` onto the CPU), which was part of this rule:
        ``TPU109`` still names it in selections and suppressions.

    Why
        ``torch.save`` pickles XLA tensors as XLA tensors: the file loads back onto ``xla:0`` or
        fails on a machine without XLA. ``xm.save`` syncs, moves the tensors to the CPU and
        writes once, on the master ordinal. It must be called by every rank: all ranks take part
        in the sync, and guarded calls are the classic torch_xla checkpoint hang (#2712, #2224).

        Semantics: which process writes is now decided by ``xm.save`` (the master ordinal), not
        by the guard; the file holds CPU tensors.

    Example
        Before::

            if dist.get_rank() == 0:
                print("saving")
                torch.save({"model": model.state_dict()}, "ckpt.pt")

        After::

            if dist.get_rank() == 0:
                print("saving")
            xm.save({"model": model.state_dict()}, "ckpt.pt")
    """

    CODE = "TPU109"
    NAME = "checkpoints"
    SUMMARY = "torch.save of model/optimizer state -> xm.save on every rank (rank-0 guards lifted)"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("save",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(SAVE)

    VALID = [
        Valid(
            "import torch\ntorch.save(args, 'args.pt')\ntorch.save({'epoch': 3}, 'meta.pt')\n",
            why="plain CPU objects",
        ),
        Valid(
            "import torch_xla.core.xla_model as xm\nimport torch\n\n"
            "xm.save(model.state_dict(), 'm.pt')\nsd = torch.load('m.pt', map_location='cpu')\n",
            why="already migrated",
        ),
        Valid(
            "import torch\ntorch.save(model.state_dict(), buf, pickle_protocol=4)\n",
            why="xm.save has no pickle_protocol",
        ),
        Valid(
            "import numpy as np\nimport pickle\n\nnp.save('a.npy', arr)\npickle.load(f)\n",
            why="not torch",
        ),
        Valid(
            "import torch\n\nif rank == 0:\n    torch.save(args, 'args.pt')\n",
            why="saving CPU objects under a guard is fine",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n\ntorch.save(model.state_dict(), 'model.pt')\n",
            "import torch_xla.core.xla_model as xm\n\nxm.save(model.state_dict(), 'model.pt')\n",
        ),
        Invalid(
            "import torch\n\ntorch.save(\n    {'model': model.state_dict(), 'opt': opt.state_dict(), 'epoch': epoch},\n"
            "    path,\n)\nx = torch.zeros(1)\n",
            "import torch\nimport torch_xla.core.xla_model as xm\n\n"
            "xm.save(\n    {'model': model.state_dict(), 'opt': opt.state_dict(), 'epoch': epoch},\n"
            "    path,\n)\nx = torch.zeros(1)\n",
        ),
        Invalid(
            "import torch\n\n\ndef checkpoint(model, path):\n"
            "    state = {'model': model.state_dict()}\n    torch.save(state, path)\n"
            "    return torch.load(path, map_location='cpu')\n",
            "import torch\nimport torch_xla.core.xla_model as xm\n\n\ndef checkpoint(model, path):\n"
            "    state = {'model': model.state_dict()}\n    xm.save(state, path)\n"
            "    return torch.load(path, map_location='cpu')\n",
            why="a variable of the function holding state",
        ),
        Invalid(
            "import torch\nimport torch.distributed as dist\n\n"
            "if dist.get_rank() == 0:\n    torch.save(model.state_dict(), 'm.pt')\n",
            "import torch_xla.core.xla_model as xm\n\n" "xm.save(model.state_dict(), 'm.pt')\n",
            why="a guard holding only the save disappears (its imports too, if unused)",
        ),
        Invalid(
            "import torch\n\nfor epoch in range(3):\n    train(epoch)\n    # checkpoint\n"
            "    if rank == 0:\n        print('saving', epoch)\n"
            "        torch.save({'model': model.state_dict()}, f'ckpt{epoch}.pt')\n"
            "    x = torch.ones(1)\n",
            "import torch\nimport torch_xla.core.xla_model as xm\n\nfor epoch in range(3):\n"
            "    train(epoch)\n    # checkpoint\n    if rank == 0:\n        print('saving', epoch)\n"
            "    xm.save({'model': model.state_dict()}, f'ckpt{epoch}.pt')\n"
            "    x = torch.ones(1)\n",
            why="only the save leaves the guard; the print stays guarded",
        ),
        Invalid(
            "import torch\nimport torch_xla.core.xla_model as xm\n\n"
            "if xm.is_master_ordinal():\n    torch.save(opt.state_dict(), 'o.pt')\n"
            "    shutil.copyfile('o.pt', 'best.pt')\nx = torch.ones(1)\n",
            "import torch\nimport torch_xla.core.xla_model as xm\n\n"
            "xm.save(opt.state_dict(), 'o.pt')\nif xm.is_master_ordinal():\n"
            "    shutil.copyfile('o.pt', 'best.pt')\nx = torch.ones(1)\n",
            why="statements after the save stay guarded, after it",
        ),
        Invalid(
            "import torch\n\nif args.rank == 0: torch.save(model.state_dict(), p)\n"
            "x = torch.ones(1)\n",
            "import torch\nimport torch_xla.core.xla_model as xm\n\n"
            "xm.save(model.state_dict(), p)\nx = torch.ones(1)\n",
        ),
        Invalid(
            "import torch\n\nif rank == 0: print('saving'); torch.save(model.state_dict(), p)\n"
            "x = torch.ones(1)\n",
            "import torch\nimport torch_xla.core.xla_model as xm\n\n"
            "if rank == 0: print('saving'); xm.save(model.state_dict(), p)\nx = torch.ones(1)\n",
            why="a one-line guard with more than the save is not split",
        ),
        Invalid(
            "import torch\n\nif rank == 0 and epoch % 10 == 0:\n"
            "    torch.save(model.state_dict(), p)\nx = torch.ones(1)\n",
            "import torch\nimport torch_xla.core.xla_model as xm\n\nif rank == 0 and epoch % 10 == 0:\n"
            "    xm.save(model.state_dict(), p)\nx = torch.ones(1)\n",
            why="a guard that also tests the epoch is not lifted",
        ),
        Invalid(
            "from torch import save\nimport torch\n\nsave(obj=model.state_dict(), f=path)\n"
            "x = torch.ones(1)\n",
            "import torch\nimport torch_xla.core.xla_model as xm\n\n"
            "xm.save(data=model.state_dict(), file_or_path=path)\nx = torch.ones(1)\n",
            why="keywords renamed to xm.save's",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._calls_by_name: dict[str, list[cst.Call]] = {}
        self._save_lines: set[int] = set()  # statement lines holding a rewritten save
        self._state_helpers: set[str] = set()  # functions whose torch.save saves a parameter

    # ------------------------------------------------------------------ pre-scan
    def visit_Module(self, node: cst.Module) -> None:
        collector = _CallCollector()
        visit_without_copying(node, collector)
        self._calls_by_name = collector.by_name
        # Helpers are known before any call site is visited, wherever they are defined.
        for call in collector.calls:
            saved = _argument(call, 0, "obj")
            if saved is not None and self.is_name(call.func, SAVE):
                self._saves_state(saved)

    # ------------------------------------------------------------------ saves
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.is_name(original_node.func, SAVE):
            return self._xm_save(original_node, updated_node)
        return updated_node

    def _xm_save(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        keywords = [a.keyword.value for a in original.args if a.keyword is not None]
        if any(k not in SAVE_KEYWORDS for k in keywords) or any(a.star for a in original.args):
            return updated
        saved = _argument(original, 0, "obj")
        if saved is None or not self._saves_state(saved):
            return updated
        args = [
            a.with_changes(keyword=cst.Name(SAVE_KEYWORDS[a.keyword.value])) if a.keyword else a
            for a in updated.args
        ]
        self.release_binding(original.func)
        self.require_import(XM)
        self.record_rewrite()
        line = self._statement_line(original)
        if line is not None:
            self._save_lines.add(id(line))
        return updated.with_changes(func=cst.parse_expression("xm.save"), args=args)

    # ------------------------------------------------------------------ guards
    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        if original_node.orelse is not None or not _is_rank_zero_guard(original_node.test):
            return updated_node
        body = original_node.body.body
        lifted = [self._is_save_line(statement) for statement in body]
        if not any(lifted):
            return updated_node
        if isinstance(original_node.body, cst.SimpleStatementSuite) and not all(lifted):
            return updated_node  # ``if rank == 0: print(); torch.save(...)``: left guarded
        statements = _split_guard(updated_node, lifted)
        leading = tuple(original_node.leading_lines)
        self.edits.replace(original_node, Replacement(tuple(statements), leading=leading))
        for node in _names_in(original_node.test):
            self.release_binding(node)
        self.record_rewrite()
        return updated_node

    def _is_save_line(self, statement: cst.CSTNode) -> bool:
        if id(statement) in self._save_lines:
            return True
        if isinstance(statement, cst.BaseSmallStatement):
            statement = cst.SimpleStatementLine([statement])
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return False
        small = statement.body[0]
        if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
            return False
        func = small.value.func
        return isinstance(func, cst.Name) and func.value in self._state_helpers

    # ------------------------------------------------------------------ what is state
    def _saves_state(self, saved: cst.BaseExpression) -> bool:
        if self._is_state(saved):
            return True
        helper = self._helper_parameter(saved)
        if helper is None:
            return False
        function, position, name = helper
        for call in self._calls_by_name.get(function.name.value, ()):
            argument = _argument(call, position, name)
            if argument is not None and self._is_state(argument):
                self._state_helpers.add(function.name.value)
                return True
        return False

    def _is_state(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        if depth > 3:
            return False
        if isinstance(expr, cst.Call):
            func = expr.func
            return isinstance(func, cst.Attribute) and func.attr.value == "state_dict"
        if isinstance(expr, cst.Dict):
            return any(
                isinstance(e, cst.DictElement) and self._is_state(e.value, depth + 1)
                for e in expr.elements
            )
        if isinstance(expr, cst.Name):
            return any(self._is_state(v, depth + 1) for v in self.assigned_values(expr))
        return False

    def _helper_parameter(self, saved: cst.BaseExpression):
        """(function, position, name) when ``saved`` is a parameter of its enclosing function."""
        if not isinstance(saved, cst.Name):
            return None
        node = self.parent_of(saved)
        while node is not None and not isinstance(node, cst.FunctionDef):
            node = self.parent_of(node)
        if node is None:
            return None
        for position, param in enumerate(node.params.params):
            if param.name.value == saved.value:
                return node, position, param.name.value
        return None

    # ------------------------------------------------------------------ tree helpers
    def _statement_line(self, node: cst.CSTNode):
        small = None
        current = self.parent_of(node)
        while current is not None and not isinstance(current, cst.BaseStatement):
            if isinstance(current, cst.BaseSmallStatement):
                small = current
            current = self.parent_of(current)
        if isinstance(current, cst.SimpleStatementLine):
            return current
        if isinstance(current, cst.If) and isinstance(current.body, cst.SimpleStatementSuite):
            return small  # ``if rank == 0: torch.save(...)``
        return None


class _CallCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.calls: list[cst.Call] = []
        self.by_name: dict[str, list[cst.Call]] = {}

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)
        if isinstance(node.func, cst.Name):
            self.by_name.setdefault(node.func.value, []).append(node)


def _argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    for index, arg in enumerate(call.args):
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
        if arg.keyword is None and not arg.star and index == position:
            return arg.value
    return None


def _names_in(node: cst.CSTNode):
    if isinstance(node, (cst.Name, cst.Attribute)):
        yield node
        return
    for child in node.children:
        yield from _names_in(child)


def _is_rank_zero_guard(test: cst.BaseExpression) -> bool:
    """A condition that only the rank-0 / master process passes, and that tests nothing else:
    ``rank == 0``, ``is_master``, ``not distributed or (distributed and rank % n == 0)``."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        operands = _operands(test, cst.Or)
        deciding = [o for o in operands if not _is_not_flag(o)]
        return bool(deciding) and all(_is_flagged_rank_zero(o) for o in deciding)
    return _is_rank_zero(test)


def _is_flagged_rank_zero(test: cst.BaseExpression) -> bool:
    """``rank == 0`` or, as one side of an ``or``, ``distributed and rank == 0``."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        operands = _operands(test, cst.And)
        return any(_is_rank_zero(o) for o in operands) and all(
            _is_rank_zero(o) or _is_flag(o) for o in operands
        )
    return _is_rank_zero(test)


def _is_rank_zero(test: cst.BaseExpression) -> bool:
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if not isinstance(target.operator, cst.Equal):
            return False
        left, right = test.left, target.comparator
        for side, other in ((left, right), (right, left)):
            if isinstance(other, cst.Integer) and other.value == "0":
                return any(word in code_of(side).lower() for word in RANK_WORDS)
        return False
    if isinstance(test, cst.Call) and not test.args:
        test = test.func
    if isinstance(test, (cst.Name, cst.Attribute)):
        last = test.value if isinstance(test, cst.Name) else test.attr.value
        return any(word in last.lower() for word in MASTER_WORDS)
    return False


def _is_flag(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Name, cst.Attribute))


def _is_not_flag(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.UnaryOperation)
        and isinstance(node.operator, cst.Not)
        and _is_flag(node.expression)
    )


def _operands(test: cst.BooleanOperation, operator: type) -> list[cst.BaseExpression]:
    operands = []
    for side in (test.left, test.right):
        if (
            isinstance(side, cst.BooleanOperation)
            and isinstance(side.operator, operator)
            and not side.lpar
        ):
            operands += _operands(side, operator)
        else:
            operands.append(side)
    return operands


def _split_guard(guard: cst.If, lifted: list[bool]) -> list[cst.BaseStatement]:
    """``guard`` split into lifted saves and guarded runs of the other statements, in order."""
    if isinstance(guard.body, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(list(guard.body.body))]
    statements: list[cst.BaseStatement] = []
    run: list[cst.BaseStatement] = []

    def close_run() -> None:
        if run:
            block = guard.body.with_changes(body=list(run))
            statements.append(guard.with_changes(leading_lines=[], body=block))
            run.clear()

    for statement, is_save in zip(guard.body.body, lifted):
        if is_save:
            close_run()
            statements.append(statement)
        else:
            run.append(statement)
    close_run()
    return statements
