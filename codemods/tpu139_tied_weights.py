"""TPU139: tie shared weights again after the model moves to the XLA device."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import FindingDoc, Safety, TpuCodemod, Valid, code_of, dotted_name
from ._loops import ModuleIndex, new_statement, walk_code
from ._statements import AppliesStatementEdits
from ._tensors import TensorFacts

UNTIED_WEIGHTS = "TPU255"
TIED_ATTRIBUTES = frozenset({"weight", "bias"})


@dataclass(frozen=True)
class Tie:
    """``self.<target> = self.<source>`` in a method of a model class."""

    cls: cst.ClassDef
    method: cst.FunctionDef
    statement: cst.SimpleStatementLine
    target: str  # "head.weight"
    source: str  # "embed.weight"


class TiedWeights(AppliesStatementEdits, TpuCodemod):
    """
    What it does
        Ties shared weights again after the model moves to the XLA device. A tie is
        ``self.head.weight = self.embed.weight`` (``weight`` / ``bias`` of two submodules) in a
        method of a model class.

        - When this file builds the model (``model = LM(...)``) and moves it
          (``model.to(device)``, ``model = model.to(device)``, ``model = LM(...).to(device)``),
          the re-tie is inserted right after the move: ``model.tie_weights()`` when the class
          defines ``tie_weights``, else the same assignment on the moved model
          (``model.head.weight = model.embed.weight``).
        - When the model is built in another file, or the tie is made only under a condition
          (``if tie_weights:``), the class re-ties on every move instead: an ``_apply`` override
          (what ``.to()`` and ``.cuda()`` go through) notes which ties hold, calls
          ``super()._apply(...)`` and repeats those.
        - Otherwise (the tie is in another method than ``__init__`` or ``tie_weights``, the class
          has its own ``_apply``) the tie is reported (TPU255).

        A move to a dtype or to ``"cpu"`` keeps the tie and is ignored. Split off from TPU117
        (``TPU117`` still names it in selections and suppressions). It runs right before
        TPU117, after TPU101 turned ``.cuda()`` into ``.to(device)``: the moves it re-ties after
        are the ones the migrated file makes.

    Why
        ``module.to(xla)`` creates a new parameter per name, so tied weights come apart and
        train separately (verified: 1 parameter becomes 2); the output head no longer follows
        the embedding, and a checkpoint holds two different tensors.

    Example
        Before::

            model = LM(vocab)
            model.to(device)

        After::

            model = LM(vocab)
            model.to(device)
            model.head.weight = model.embed.weight
    """

    CODE = "TPU139"
    NAME = "tied-weights"
    SUMMARY = "Tie shared weights again after the model moves to the XLA device (XLA unties them)"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = (".weight =", ".bias =")

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.copies_attribute(lambda a, b: a in TIED_ATTRIBUTES and b in TIED_ATTRIBUTES)

    FINDINGS = {
        UNTIED_WEIGHTS: FindingDoc(
            "weight tying is undone when the model moves to the XLA device",
            why="module.to(xla) replaces every parameter by a new XLA parameter, one per name, "
            "so two names that shared one tensor get two: the head and the embedding train "
            "separately and the parameter count grows (verified on XLA:CPU: 1 -> 2).",
            what_to_do="Tie again after the move: model.tie_weights() (Hugging Face models or "
            "a method of your own) or repeat the assignment on the moved model, "
            "model.head.weight = model.embed.weight, before the optimizer is built.",
        ),
    }

    VALID = [
        Valid(
            "import torch\nimport torch.nn as nn\n\n\nclass LM(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.head = nn.Linear(4, 10)\n"
            "        self.head.weight = nn.Parameter(torch.zeros(10, 4))\n\n\n"
            "def distil(student, teacher):\n    student.fc.weight = teacher.fc.weight\n",
            why="a new Parameter is no tie, nor a weight shared between two models outside a "
            "class",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self.index: ModuleIndex | None = None
        self.facts: TensorFacts | None = None

    def visit_Module(self, node: cst.Module) -> bool:
        self.index = ModuleIndex(self, node)
        self.facts = TensorFacts(self, self.index)
        for ties in self._ties().values():
            self._retie(ties)
        return True

    def _retie(self, ties: list[Tie]) -> None:
        cls = ties[0].cls
        statements = self._retie_statements(ties)
        conditional = any(not self._at_top_of_method(tie) for tie in ties)
        moves = self._moves_of(cls) if statements and not conditional else []
        for statement, variable in moves:
            self._insert_retie(statement, [s.format(m=variable) for s in statements])
        if moves or (statements and self._retie_on_every_move(cls, ties)):
            return
        for tie in ties:
            self.flag(
                tie.statement,
                UNTIED_WEIGHTS,
                "moving the model to the XLA device unties these weights; re-tie "
                "after .to(device)",
            )

    def _ties(self) -> dict[int, list[Tie]]:
        found: dict[int, list[Tie]] = {}
        for cls in self.index.classes:
            for method in cls.body.body:
                if not isinstance(method, cst.FunctionDef) or method.name.value == "_apply":
                    continue  # (a re-tie on every move is not a tie of its own)
                for node in walk_code(method.body):
                    tie = self._tie(cls, method, node)
                    if tie is not None:
                        found.setdefault(id(cls), []).append(tie)
        return found

    def _tie(self, cls, method, node) -> Tie | None:
        if not (isinstance(node, cst.Assign) and len(node.targets) == 1):
            return None
        target = _self_path(node.targets[0].target)
        source = _self_path(node.value)
        if target is None or source is None:
            return None
        statement = self.index.statement_of(node)
        return Tie(cls, method, statement, target, source)

    def _retie_statements(self, ties: list[Tie]) -> list[str]:
        cls = ties[0].cls
        methods = {m.name.value for m in cls.body.body if isinstance(m, cst.FunctionDef)}
        if "tie_weights" in methods:
            return ["{m}.tie_weights()"]
        if all(tie.method.name.value == "__init__" for tie in ties):
            return [f"{{m}}.{tie.target} = {{m}}.{tie.source}" for tie in ties]
        return []

    def _moves_of(self, cls: cst.ClassDef) -> list[tuple[cst.SimpleStatementLine, str]]:
        moves = []
        for call in self.index.calls:
            method = self.facts.method_of(call)
            if method is None or method[1] != "to" or not self._moves_to_device(call):
                continue
            variable = self._moved_model(call, cls)
            statement = self.index.statement_of(call)
            if variable is not None and isinstance(statement, cst.SimpleStatementLine):
                moves.append((statement, variable))
        return moves

    def _moves_to_device(self, call: cst.Call) -> bool:
        if len(call.args) != 1 or call.args[0].star:
            return False
        arg = call.args[0]
        if arg.keyword is not None and arg.keyword.value != "device":
            return False
        value = arg.value
        if isinstance(value, cst.SimpleString) and value.evaluated_value == "cpu":
            return False
        return not self.facts.is_torch_dtype(value)

    def _moved_model(self, call: cst.Call, cls: cst.ClassDef) -> str | None:
        """The name of the model ``call`` (``m.to(d)`` / ``Cls(...).to(d)``) moves, when the
        statement is ``m.to(d)``, ``m = m.to(d)`` or ``m = Cls(...).to(d)``."""
        statement = self.index.statement_of(call)
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        small = statement.body[0]
        receiver = call.func.value
        if isinstance(small, cst.Expr) and small.value is call and isinstance(receiver, cst.Name):
            return receiver.value if self._builds(receiver, cls) else None
        if not (isinstance(small, cst.Assign) and small.value is call and len(small.targets) == 1):
            return None
        target = small.targets[0].target
        if not isinstance(target, cst.Name):
            return None
        if self._constructs(receiver, cls):
            return target.value
        if isinstance(receiver, cst.Name) and receiver.value == target.value:
            return target.value if self._builds(receiver, cls) else None
        return None

    def _builds(self, name: cst.Name, cls: cst.ClassDef) -> bool:
        values = self.index.binding_values(name)
        return bool(values) and all(
            self._constructs(value, cls)
            or (
                (method := self.facts.method_of(value)) is not None
                and method[1] == "to"
                and (
                    self._constructs(method[0], cls)
                    or (isinstance(method[0], cst.Name) and method[0].value == name.value)
                )
            )
            for value in values
        )

    def _constructs(self, value: cst.BaseExpression, cls: cst.ClassDef) -> bool:
        return (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Name)
            and value.func.value == cls.name.value
        )

    def _at_top_of_method(self, tie: Tie) -> bool:
        """The tie is made whenever its method runs (not under an ``if tie_weights:``)."""
        return self.index.parent(tie.statement) is tie.method.body

    def _retie_on_every_move(self, cls: cst.ClassDef, ties: list[Tie]) -> bool:
        """The class re-ties its weights whenever it is moved, by extending ``nn.Module._apply``
        (what ``.to()``, ``.cuda()`` and dtype casts go through): for a model built in another
        file, or tied only under a condition. Each tie is repeated only if it held before the
        move. False when the class has an ``_apply`` of its own."""
        methods = [m for m in cls.body.body if isinstance(m, cst.FunctionDef)]
        pairs = [(f"self.{tie.target}", f"self.{tie.source}") for tie in ties]
        applies = [m for m in methods if m.name.value == "_apply"]
        if applies:  # ours, from an earlier run, or the user's
            code = code_of(applies[0])
            return all(f"{target} = {source}" in code for target, source in pairs)
        init = next((m for m in methods if m.name.value == "__init__"), None)
        if init is None:
            return False
        names = ["tied"] if len(pairs) == 1 else [f"tied_{i + 1}" for i in range(len(pairs))]
        before = "".join(f"    {n} = {t} is {s}\n" for n, (t, s) in zip(names, pairs))
        after = "".join(f"    if {n}:\n        {t} = {s}\n" for n, (t, s) in zip(names, pairs))
        method = cst.parse_statement(
            "def _apply(self, fn, *args, **kwargs):\n"
            "    # an XLA device gives each parameter a new object: tie the weights again\n"
            f"{before}"
            "    module = super()._apply(fn, *args, **kwargs)\n"
            f"{after}"
            "    return module\n"
        ).with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        self.edits.insert_after(init, method)
        self.record_rewrite()
        return True

    def _insert_retie(self, statement: cst.SimpleStatementLine, lines: list[str]) -> None:
        place = self.index.block_and_index(statement)
        if place is None:
            return
        block, position = place
        following = [
            code_of(s).strip() for s in block.body[position + 1 : position + 1 + len(lines)]
        ]
        if following == lines:
            return
        for line in lines:
            self.edits.insert_after(statement, new_statement(line))
            self.record_rewrite()


def _self_path(node: cst.BaseExpression) -> str | None:
    """``head.weight`` for ``self.head.weight`` (a weight or bias of a submodule)."""
    name = dotted_name(node)
    if not name or not name.startswith("self."):
        return None
    parts = name.split(".")
    if len(parts) < 3 or parts[-1] not in TIED_ATTRIBUTES:
        return None
    return ".".join(parts[1:])
