"""TPU106: put a model on the XLA device before an optimizer is built from its parameters."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ParentNodeProvider

from migrate.fastcst.facts import FileFacts
from ._base import TORCH_XLA, Invalid, Safety, TpuCodemod, Valid, code_of, walk_all
from ._frameworks import ACCELERATE, uses_a_framework
from ._loops import ModuleIndex
from ._statements import AppliesStatementEdits

OPTIMIZER_PACKAGE = "torch.optim."
NOT_OPTIMIZERS = ("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")
PARAMETER_METHODS = frozenset({"parameters", "named_parameters"})
MOVE_METHODS = frozenset({"to", "cuda", "to_empty"})
MOVE_SELF = "self.to(torch_xla.device())\n"


class ModelBeforeOptimizer(AppliesStatementEdits, TpuCodemod):
    """
    What it does
        When a model is built (``model = Net(...)``) and an optimizer is then built from its
        parameters in the same block before the model was moved to a device, the model is moved
        where it is built: ``model = Net(...).to(device)`` (``device`` when it is already bound
        there, else ``torch_xla.device()``). Parameter groups built from
        ``model.named_parameters()`` count too. A later ``model.to(device)`` becomes a no-op and
        is left in place.
        A module that builds its own optimizer in ``__init__`` (``self.opt =
        Adam(self.parameters())``) moves itself first: ``self.to(torch_xla.device())`` goes
        right above the optimizer. ``torch_xla.device()`` and not a ``device`` name, which in
        ``__init__`` is often a parameter left at None (``nn.Linear``'s signature).
        A model handed to ``accelerator.prepare(...)`` is left as it is: prepare moves it and
        points the prepared optimizer at the moved parameters.

    Why
        On CUDA, ``module.to(device)`` swaps each parameter's data in place, so an optimizer built
        earlier still holds the live parameters. Moving a module to an XLA device creates *new*
        Parameter objects instead (the tensor types are not shallow-copy compatible): the
        optimizer keeps updating stale CPU copies and the model on the TPU never learns. This
        is the reason torch_xla's examples move the model before building the optimizer; it is
        also how weight tying breaks on XLA. The move often happens far away (a Trainer class
        in another module calls ``self.model.to(self.device)``), so the fix is made where the
        model is built.

    Example
        Before::

            model = MLP(20, 64, 4)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
            trainer = Trainer(model, optimizer, device)  # moves the model inside

        After::

            model = MLP(20, 64, 4).to(device)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
            trainer = Trainer(model, optimizer, device)  # moves the model inside
    """

    CODE = "TPU106"
    NAME = "model-before-optimizer"
    SUMMARY = "Move a model to the XLA device before an optimizer is built from its parameters"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("optim",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(OPTIMIZER_PACKAGE.rstrip(".")) and facts.calls(*PARAMETER_METHODS)

    VALID = [
        Valid(
            "import torch\nfrom accelerate import Accelerator\n\n"
            "accelerator = Accelerator()\nmodel = Net()\n"
            "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "model, optimizer = accelerator.prepare(model, optimizer)\n",
            why="accelerator.prepare moves the model and points the optimizer at its parameters",
        ),
        Valid(
            "import torch\n\ndevice = torch.device('cpu')\n"
            "model = Net().to(device)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
            why="already moved where it is built",
        ),
        Valid(
            "import torch\n\nmodel = Net()\nmodel.to(device)\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
            why="moved before the optimizer is built",
        ),
        Valid(
            "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n\n"
            "def main(device):\n    model = Net().to(device)\n    ddp = DDP(model)\n"
            "    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)\n",
            why="a wrapper of a model already on the device is not moved again",
        ),
        Valid(
            "import torch\nimport torch_xla\n\ndevice = torch_xla.device()\n"
            "model = Net().to(device)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
            why="the device itself is not a model",
        ),
        Valid(
            "import torch\n\nmodel = Net()\n"
            "sched = torch.optim.lr_scheduler.StepLR(model.parameters(), 1)\n",
            why="a scheduler is not an optimizer",
        ),
        Valid(
            "class Opt:\n    pass\n\nmodel = Net()\nopt = Opt(model.parameters())\n",
            why="not a torch optimizer (and no torch in the file)",
        ),
        Valid(
            "import torch\n\ndef build(model):\n"
            "    return torch.optim.SGD(model.parameters(), lr=0.1)\n",
            why="the model is not built here: nothing to move",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n\ndef main(device):\n    model = MLP(20, 4)\n"
            "    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
            "    Trainer(model, optimizer, device).fit()\n",
            "import torch\n\ndef main(device):\n    model = MLP(20, 4).to(device)\n"
            "    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
            "    Trainer(model, optimizer, device).fit()\n",
        ),
        Invalid(
            "import torch\nfrom torch import optim\n\nmodel = Net()\n"
            "opt = optim.SGD(model.parameters(), lr=0.1)\nmodel.to(device)\n",
            "import torch\nfrom torch import optim\nimport torch_xla\n\n"
            "model = Net().to(torch_xla.device())\n"
            "opt = optim.SGD(model.parameters(), lr=0.1)\nmodel.to(device)\n",
            why="device is bound only later in the file: use torch_xla.device()",
        ),
        Invalid(
            "import torch\n\ndevice = torch_xla.device()\nmodel = Net()\n"
            "groups = [\n    {'params': [p for n, p in model.named_parameters() if 'bias' in n]},\n]\n"
            "opt = torch.optim.AdamW(groups, lr=1e-3)\n",
            "import torch\n\ndevice = torch_xla.device()\nmodel = Net().to(device)\n"
            "groups = [\n    {'params': [p for n, p in model.named_parameters() if 'bias' in n]},\n]\n"
            "opt = torch.optim.AdamW(groups, lr=1e-3)\n",
            why="parameter groups built from named_parameters()",
        ),
        Invalid(
            "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n\n"
            "def main(device):\n    model = Net()\n    ddp = DDP(model, gradient_as_bucket_view=True)\n"
            "    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)\n",
            "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n\n"
            "def main(device):\n    model = Net().to(device)\n"
            "    ddp = DDP(model, gradient_as_bucket_view=True)\n"
            "    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)\n",
            why="the optimizer sees the model through a wrapper: the model moves, not the wrapper",
        ),
        Invalid(
            "import torch\n\nclass Lit:\n    def __init__(self, device):\n"
            "        self.net = Net()\n"
            "        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1)\n"
            "        self.net.to(device)\n",
            "import torch\n\nclass Lit:\n    def __init__(self, device):\n"
            "        self.net = Net().to(device)\n"
            "        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1)\n"
            "        self.net.to(device)\n",
        ),
        Invalid(
            "import torch\nfrom torch.optim import Adam\n\n\n"
            "class Layer(torch.nn.Linear):\n"
            "    def __init__(self, in_features, out_features, bias=True, device=None):\n"
            "        super().__init__(in_features, out_features, bias, device)\n"
            "        self.relu = torch.nn.ReLU()\n"
            "        self.opt = Adam(self.parameters(), lr=0.03)\n\n\n"
            "layers = [Layer(784, 500).to(device), Layer(500, 500).to(device)]\n",
            "import torch\nfrom torch.optim import Adam\nimport torch_xla\n\n\n"
            "class Layer(torch.nn.Linear):\n"
            "    def __init__(self, in_features, out_features, bias=True, device=None):\n"
            "        super().__init__(in_features, out_features, bias, device)\n"
            "        self.relu = torch.nn.ReLU()\n"
            "        self.to(torch_xla.device())\n"
            "        self.opt = Adam(self.parameters(), lr=0.03)\n\n\n"
            "layers = [Layer(784, 500).to(device), Layer(500, 500).to(device)]\n",
            why="a module that builds its own optimizer moves itself first (device is None here)",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._to_move: set[int] = set()  # ids of model-constructor calls to chain .to() onto

    def visit_Module(self, node: cst.Module) -> None:
        # accelerator.prepare moves a model and points its optimizer at the moved parameters;
        # the HF Trainer and Lightning's Fabric want the model on the device before the optimizer
        self.index = ModuleIndex(self, node) if uses_a_framework(self) else None
        self._scan_block(node.body)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._scan_block(node.body)
        if self.index is None and self._is_method_body(node, "__init__"):
            self._move_self_before_its_optimizer(node.body)

    def _is_method_body(self, block: cst.IndentedBlock, name: str) -> bool:
        function = self.get_metadata(ParentNodeProvider, block, None)
        if not isinstance(function, cst.FunctionDef) or function.name.value != name:
            return False
        body = self.get_metadata(ParentNodeProvider, function, None)
        return isinstance(self.get_metadata(ParentNodeProvider, body, None), cst.ClassDef)

    def _move_self_before_its_optimizer(self, statements) -> None:
        """``__init__`` builds an optimizer from ``self.parameters()`` before anything moved
        ``self``: the module moves itself right above it."""
        for statement in statements:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            if any(_moves(small, "self") for small in statement.body):
                return
            if any(_feeds(o, "self") for s in statement.body for o in self._optimizer_calls(s)):
                self.require_import(TORCH_XLA)
                self.edits.insert_before(statement, cst.parse_statement(MOVE_SELF))
                self.record_rewrite()
                return

    def _scan_block(self, statements) -> None:
        """Walk one block in order: models built, moved, wrapped and fed to an optimizer."""
        built: dict[str, cst.Call] = {}  # target code -> constructor call, not yet moved
        inner: dict[str, str] = {}  # parameter list or wrapper (DDP(model)) -> model target code
        models: set[str] = set()  # every target that held a model in this block
        for statement in statements:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                self._scan_statement(small, built, inner, models)

    def _scan_statement(
        self, small, built: dict[str, cst.Call], inner: dict[str, str], models: set[str]
    ) -> None:
        for target in list(built):
            if _moves(small, target):
                del built[target]
        optimizer = _first(self._optimizer_calls(small))
        if optimizer is not None:
            for target in list(built):
                fed_through = {inner.get(name) for name in _names_in(optimizer)}
                fed_through |= {inner.get(t) for t in inner if _feeds(optimizer, t)}
                if _feeds(optimizer, target) or target in fed_through:
                    self._to_move.add(id(built.pop(target)))
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            return
        target = code_of(small.targets[0].target)
        value = small.value
        wrapped = _wrapped_model(value, models | set(inner))
        built.pop(target, None)
        inner.pop(target, None)
        if wrapped is not None:  # DDP(model), torch.compile(model): follows the model it wraps
            inner[target] = inner.get(wrapped, wrapped)
        elif isinstance(value, cst.Call) and not _is_tensor_like(value):
            models.add(target)
            if not _is_moved_value(value):
                built[target] = value
        for model in list(built):
            if _feeds(value, model) and isinstance(small.targets[0].target, cst.Name):
                inner[target] = model

    def _optimizer_calls(self, node: cst.CSTNode):
        for call in _calls(node):
            names = self.qualified_names(call.func)
            if any(
                n.startswith(OPTIMIZER_PACKAGE) and not n.startswith(NOT_OPTIMIZERS) for n in names
            ):
                yield call

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if id(original_node) not in self._to_move:
            return updated_node
        if (
            self.index is not None
            and self.index.frameworks.manages_value(original_node) == ACCELERATE
        ):
            return updated_node
        self.record_rewrite()
        return cst.Call(
            func=cst.Attribute(value=updated_node, attr=cst.Name("to")),
            args=[cst.Arg(self.device_expression(original_node))],
        )


def _calls(node: cst.CSTNode):
    return (n for n in walk_all(node) if isinstance(n, cst.Call))


def _first(iterable):
    return next(iter(iterable), None)


def _names_in(node: cst.CSTNode) -> set[str]:
    found = {node.value} if isinstance(node, cst.Name) else set()
    for child in node.children:
        found |= _names_in(child)
    return found


def _feeds(node: cst.CSTNode, target: str) -> bool:
    """``node`` contains ``target.parameters()`` or ``target.named_parameters()``."""
    return any(
        isinstance(call.func, cst.Attribute)
        and call.func.attr.value in PARAMETER_METHODS
        and code_of(call.func.value) == target
        for call in _calls(node)
    )


def _moves(node: cst.CSTNode, target: str) -> bool:
    """``target.to(...)`` / ``target.cuda()`` anywhere in ``node``."""
    return any(
        isinstance(call.func, cst.Attribute)
        and call.func.attr.value in MOVE_METHODS
        and code_of(call.func.value) == target
        for call in _calls(node)
    )


def _wrapped_model(value: cst.BaseExpression, models: set[str]) -> str | None:
    """The model a wrapper call takes as its first argument (``DDP(model, ...)``), if any."""
    if not isinstance(value, cst.Call) or _is_moved_value(value) or not value.args:
        return None
    first = value.args[0]
    if first.keyword is not None or first.star:
        return None
    code = code_of(first.value)
    return code if code in models else None


def _is_moved_value(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in MOVE_METHODS


def _is_tensor_like(call: cst.Call) -> bool:
    """Factories and conversions produce tensors, not modules: never a model to move."""
    name = code_of(call.func)
    return name.startswith(("torch.", "torch_xla.", "np.", "numpy.")) and not name.startswith(
        "torch.nn."
    )
