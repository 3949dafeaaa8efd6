"""TPU112: drop ``torch.compile``: on XLA the lazy-tensor path already compiles whole graphs."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ParentNodeProvider

from migrate.fastcst.facts import FileFacts
from ._base import Invalid, Safety, TpuCodemod, Valid
from ._statements import AppliesStatementEdits

COMPILE = "torch.compile"
# A backend chosen for XLA on purpose (dynamo + openxla) is the user's decision: kept.
XLA_BACKENDS = frozenset({"openxla", "openxla_eval"})


class TorchCompile(AppliesStatementEdits, TpuCodemod):
    """
    What it does
        Removes ``torch.compile``: ``model = torch.compile(model, ...)`` is deleted,
        ``net = torch.compile(model)`` becomes ``net = model``, any other
        ``torch.compile(fn, ...)`` call becomes ``fn``, and ``@torch.compile`` /
        ``@torch.compile(...)`` decorators are removed. Its ``mode=``, ``fullgraph=``,
        ``dynamic=`` and ``backend=`` arguments go with it. A call that already uses an XLA
        backend (``backend="openxla"`` / ``"openxla_eval"``) is kept: that is a deliberate choice.

    Why
        The default inductor backend generates CUDA/C++ kernels and does not run XLA tensors.
        The two XLA options are dynamo with ``backend="openxla"`` or nothing at all: the lazy
        tensor already records the whole step and compiles it once at the step boundary. Removing
        it is the safer default (the torch_xla 2.9 examples do not use ``torch.compile``; dynamo
        training is "experimental" per torch_xla's dynamo docs) and measured cheaper: on a small
        MLP lazy mode needed 2 compiles, dynamo+openxla 6, with identical losses. If a step
        function must be traced as one graph, ``torch_xla.compile(step_fn, full_graph=True)`` is
        the 2.9 idiom.

        Semantics: numerics are unchanged (compilation does not change the math beyond
        floating-point fusion order); what changes is who compiles. Anything that relied on
        ``torch.compile`` returning an ``OptimizedModule`` (``model._orig_mod``) must be edited
        by hand.

    Example
        Before::

            model = Net().to(device)
            model = torch.compile(model, mode="max-autotune")

            @torch.compile
            def loss_fn(x, y):
                return ((x - y) ** 2).mean()

        After::

            model = Net().to(device)

            def loss_fn(x, y):
                return ((x - y) ** 2).mean()
    """

    CODE = "TPU112"
    NAME = "torch-compile"
    SUMMARY = "torch.compile removed (decorators too): the XLA lazy tensor compiles whole graphs"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("compile",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(COMPILE)

    VALID = [
        Valid(
            "import torch\nmodel = torch.compile(model, backend='openxla')\n",
            why="dynamo with the XLA backend was chosen on purpose",
        ),
        Valid(
            "import torch\n\n@torch.compile(backend='openxla_eval')\ndef infer(x):\n    return x\n",
            why="an XLA backend on a decorator is kept too",
        ),
        Valid(
            "import re\npattern = re.compile(r'\\d+')\ncode = compile(src, 'f.py', 'exec')\n",
            why="re.compile and the builtin compile are not torch.compile",
        ),
        Valid(
            "import torch_xla\nstep = torch_xla.compile(step_fn, full_graph=True)\n",
            why="torch_xla.compile is the XLA idiom",
        ),
        Valid(
            "import torch\ncompiled = torch.compile(**options)\n",
            why="nothing to unwrap to: no positional argument",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n\nmodel = torch.nn.Linear(4, 2)\n# compile once; later calls are fast\n"
            "model = torch.compile(model)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n",
            "import torch\n\nmodel = torch.nn.Linear(4, 2)\n"
            "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n",
            why="a comment about the compile goes with it even when the next line follows directly",
        ),
        Invalid(
            "import torch\n\nmodel = torch.nn.Linear(4, 2)\n# model and optimizer\n"
            "model = torch.compile(model)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n",
            "import torch\n\nmodel = torch.nn.Linear(4, 2)\n# model and optimizer\n"
            "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n",
            why="other comments follow the shared policy: they describe the group",
        ),
        Invalid(
            "import torch\n\nmodel = torch.nn.Linear(4, 2)\nmodel = torch.compile(model)\nmodel.train()\n",
            "import torch\n\nmodel = torch.nn.Linear(4, 2)\nmodel.train()\n",
            why="reassigning the model to its compiled self: the statement goes",
        ),
        Invalid(
            "import torch\n\nmodel = torch.nn.Linear(4, 2)\n# compile for speed\nmodel = torch.compile(model, mode='max-autotune', fullgraph=True)\n\nopt = make_opt(model)\n",
            "import torch\n\nmodel = torch.nn.Linear(4, 2)\n\nopt = make_opt(model)\n",
            why="mode= and fullgraph= go with it; the comment described the removed line",
        ),
        Invalid(
            "import torch\n\nmodel = torch.compile(model, backend='eager')\nloss = torch.zeros(())\n",
            "import torch\n\nloss = torch.zeros(())\n",
            why="the eager/inductor backends are CPU/GPU backends: removed as well",
        ),
        Invalid(
            "import torch\n\nself.model = torch.compile(self.model)\nself.loss = torch.nn.MSELoss()\n",
            "import torch\n\nself.loss = torch.nn.MSELoss()\n",
            why="attribute targets too",
        ),
        Invalid(
            "import torch\n\ncompiled = torch.compile(model)\nout = compiled(torch.ones(2))\n",
            "import torch\n\ncompiled = model\nout = compiled(torch.ones(2))\n",
            why="another name keeps pointing at the plain model",
        ),
        Invalid(
            "import torch\n\ntrainer = Trainer(torch.compile(model, dynamic=False), torch.optim.SGD)\n",
            "import torch\n\ntrainer = Trainer(model, torch.optim.SGD)\n",
        ),
        Invalid(
            "import torch\n\n\n# the loss\n@torch.compile\ndef loss_fn(x, y):\n    return torch.mean((x - y) ** 2)\n",
            "import torch\n\n\n# the loss\ndef loss_fn(x, y):\n    return torch.mean((x - y) ** 2)\n",
            why="the comment above the decorator stays above the def",
        ),
        Invalid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n"
            "    @torch.compile(mode='reduce-overhead')\n"
            "    def forward(self, x):\n        return x\n",
            "import torch\n\n\nclass Net(torch.nn.Module):\n"
            "    def forward(self, x):\n        return x\n",
        ),
        Invalid(
            "import torch\nfrom torch import compile\n\nmodel = compile(model)\nprint(torch.__version__)\n",
            "import torch\n\nprint(torch.__version__)\n",
            why="the import that only served torch.compile goes too",
        ),
        Invalid(
            "import torch\n\nif args.compile:\n    model = torch.compile(model)\nmodel.to(torch.float32)\n",
            "import torch\n\nmodel.to(torch.float32)\n",
            why="an optional compile goes with its if, left empty",
        ),
        Invalid(
            "import torch\n\n\ndef build(cfg):\n    net = torch.nn.Linear(cfg.d, 1)\n    return torch.compile(net)\n",
            "import torch\n\n\ndef build(cfg):\n    net = torch.nn.Linear(cfg.d, 1)\n    return net\n",
        ),
    ]

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if not self._is_removable_compile(original_node):
            return updated_node
        statement = self._self_assignment(original_node)
        if statement is not None:
            self.edits.remove(statement)
            self._removed_lines.add(id(statement))
            self.release_binding(original_node.func)
            self.record_rewrite()
            return updated_node
        self.release_binding(original_node.func)
        self.record_rewrite()
        return updated_node.args[0].value

    def __init__(self, context) -> None:
        super().__init__(context)
        self._removed_lines: set[int] = set()

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        # A comment right above the removed line that talks about compiling goes with it;
        # other comments follow the shared policy of _statements.py.
        if id(original_node) not in self._removed_lines:
            return updated_node
        lines = list(updated_node.leading_lines)
        start = len(lines)
        while start and lines[start - 1].comment is not None:
            start -= 1
        own = lines[start:]
        kept = [line for line in own if "compil" not in line.comment.value.lower()]
        if len(kept) == len(own):
            return updated_node
        return updated_node.with_changes(leading_lines=[*lines[:start], *kept])

    def leave_Decorator(
        self, original_node: cst.Decorator, updated_node: cst.Decorator
    ) -> cst.Decorator | cst.RemovalSentinel:
        target = original_node.decorator
        func = target.func if isinstance(target, cst.Call) else target
        if not self.is_name(func, COMPILE):
            return updated_node
        if isinstance(target, cst.Call) and _xla_backend(target):
            return updated_node
        self.release_binding(func)
        self.record_rewrite()
        return cst.RemoveFromParent()

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        # Leading comments of a removed first decorator belong above the next line of the def.
        if original_node.decorators and len(updated_node.decorators) < len(
            original_node.decorators
        ):
            lost = original_node.decorators[0].leading_lines
            if updated_node.decorators:
                first = updated_node.decorators[0]
                if first.leading_lines != lost:
                    decorators = [
                        first.with_changes(leading_lines=lost),
                        *updated_node.decorators[1:],
                    ]
                    return updated_node.with_changes(decorators=decorators)
            elif lost:
                return updated_node.with_changes(leading_lines=[*updated_node.leading_lines, *lost])
        return updated_node

    def _is_removable_compile(self, call: cst.Call) -> bool:
        if not self.is_name(call.func, COMPILE) or _xla_backend(call):
            return False
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            return False
        parent = self._parent(call)
        return not isinstance(parent, cst.Decorator)

    def _parent(self, node: cst.CSTNode):
        try:
            return self.get_metadata(ParentNodeProvider, node)
        except KeyError:
            return None

    def _self_assignment(self, call: cst.Call) -> cst.SimpleStatementLine | None:
        """The statement ``x = torch.compile(x, ...)`` (a line of its own), if ``call`` is that."""
        assign = self._parent(call)
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            return None
        if not assign.targets[0].target.deep_equals(call.args[0].value):
            return None
        line = self._parent(assign)
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            return line
        return None


def _xla_backend(call: cst.Call) -> bool:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "backend":
            value = arg.value
            return isinstance(value, cst.SimpleString) and value.evaluated_value in XLA_BACKENDS
    return False
