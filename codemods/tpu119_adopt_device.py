"""TPU119: a training script with no device code gets one: its model and data go to the XLA device."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import TORCH_XLA, FindingDoc, Invalid, Safety, TpuCodemod, Valid, with_keyword_argument
from ._loops import ModuleIndex, named_like_optimizer, names_in_target, new_statement, walk_code
from ._statements import after_imports
from ._tensors import TENSOR_ATTRIBUTES

FINDING = "TPU281"
DEVICE_NAME = "device"
# Any of these words in the code means the script already places tensors (or a framework does).
DEVICE_WORDS = frozenset(
    {"device", "cuda", "xla_device", "mps", "accelerator", "torch_xla", "xm", "get_device",
     "share_memory", "spawn", "Accelerator", "LightningModule", "Trainer", "launch"}
)  # fmt: skip
# Methods only a module (not an optimizer, not a tensor) is asked for: the evidence of a model.
MODULE_METHODS = frozenset({"parameters", "named_parameters", "train", "eval", "zero_grad"})
# ``x.to(...)`` arguments that change a dtype or layout, not a device.
NON_DEVICE_TO_KEYWORDS = frozenset({"dtype", "non_blocking", "copy", "memory_format"})
# Functions that build a tensor in place of an argument: ``torch.randn(b, 4)`` in the step.
FACTORIES = frozenset(
    {"randn", "rand", "randint", "randperm", "zeros", "ones", "full", "empty", "arange",
     "linspace", "logspace", "eye", "normal", "tensor", "as_tensor"}
)  # fmt: skip
# Values that are not tensors: a name bound to one of these is never moved.
NOT_TENSOR_VALUES = (
    cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
    cst.List, cst.Dict, cst.Set, cst.Lambda, cst.ListComp, cst.DictComp, cst.SetComp,
)  # fmt: skip


@dataclass
class Plan:
    """What the rule does to one file, worked out before anything is rewritten."""

    constructors: set[int] = field(default_factory=set)  # ids of model-building values
    factories: set[int] = field(default_factory=set)  # ids of factory calls to give device=
    before: dict[int, tuple[cst.CSTNode, list[str]]] = field(default_factory=dict)
    after: dict[int, tuple[cst.CSTNode, list[str]]] = field(default_factory=dict)
    numpy_reads: set[int] = field(default_factory=set)  # ids of ``.numpy()`` calls

    def move(self, where: dict, statement: cst.CSTNode, name: str) -> None:
        names = where.setdefault(id(statement), (statement, []))[1]
        if name not in names:
            names.append(name)


class Unplaceable(Exception):
    """A tensor feeding the model whose origin the rule cannot follow: the file is left alone."""

    def __init__(self, node: cst.CSTNode, what: str) -> None:
        super().__init__(what)
        self.node = node


class AdoptDevice(TpuCodemod):
    """
    What it does
        A training script that never mentions a device (a backward pass in a loop, or in a
        function defined in one such as the closure handed to ``optimizer.step(closure)``, and
        no ``device``, ``.cuda()``, ``.to(<device>)``, ``torch_xla`` anywhere) gets one:

        - ``device = torch_xla.device()`` after its imports;
        - each model (a name built by a call and asked for ``.parameters()``, ``.train()``,
          ``.eval()`` or ``.zero_grad()``) is moved where it is built:
          ``fc = torch.nn.Linear(4, 1).to(device)``;
        - every tensor a model call takes, and every tensor a call takes beside the model's
          output or a slice of it (the loss's target), is moved before it is used: loop
          variables at the top of their loop, names computed in the loop right after they are
          (or just before the model call when something reads them on the CPU in between),
          names bound before the loop just before the loop (module globals right after their
          assignment); a factory call in the loop (``torch.randn(...)``) gets
          ``device=device`` instead;
        - ``t.numpy()`` becomes ``t.cpu().numpy()``: ``numpy()`` refuses a tensor on a device.

        Where a tensor feeding the model comes from something the rule cannot follow (a
        ``with ... as`` target, a comprehension variable, a one-line loop), nothing is
        rewritten and TPU281 names the input. Scripts that use ``torch.multiprocessing`` or a training framework
        (Accelerate, Lightning, the HF Trainer) are left alone: they own their devices.

    Why
        Tutorial-style scripts (pytorch/examples' regression, most notebooks' first cells) run
        wherever torch puts tensors by default: the CPU. Adding a step boundary and nothing else
        gives a "migrated" script that never runs a graph on the TPU. The data stay produced on
        the CPU, as a DataLoader's batches are, and are copied to the device once per step;
        the random draws of the data pipeline keep their CPU stream.

    Example
        Before::

            fc = torch.nn.Linear(4, 1)
            for batch_idx in count(1):
                batch_x, batch_y = get_batch()
                fc.zero_grad()
                output = F.smooth_l1_loss(fc(batch_x), batch_y)
                output.backward()

        After::

            device = torch_xla.device()

            fc = torch.nn.Linear(4, 1).to(device)
            for batch_idx in count(1):
                batch_x, batch_y = get_batch()
                batch_x, batch_y = batch_x.to(device), batch_y.to(device)
                fc.zero_grad()
                output = F.smooth_l1_loss(fc(batch_x), batch_y)
                output.backward()
    """

    CODE = "TPU119"
    NAME = "adopt-device"
    SUMMARY = "A training script with no device code gets one: model and data go to the XLA device"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("backward",)

    FINDINGS = {
        FINDING: FindingDoc(
            "no device code, and a model input whose origin tpu-migrate cannot follow",
            why="a script that never names a device runs on the CPU; moving its model but not "
            "every tensor it takes would fail with 'Expected all tensors to be on the same "
            "device', so TPU119 moved nothing.",
            what_to_do="add device = torch_xla.device(), build the model with .to(device) and "
            "move each batch with .to(device) where it is produced.",
        ),
    }

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        if not facts.parsed:
            return True
        return facts.uses("torch") and facts.calls("backward") and not facts.mentions(*DEVICE_WORDS)

    VALID = [
        Valid(
            "import torch\n\n"
            "device = torch.device('cpu')\n"
            "model = torch.nn.Linear(4, 1).to(device)\n"
            "for x, y in loader:\n"
            "    loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))\n"
            "    loss.backward()\n",
            why="the script places its tensors already: TPU101 migrates that",
        ),
        Valid(
            "import torch\n\n"
            "model = Net()\n"
            "model.share_memory()\n"
            "for x, y in loader:\n"
            "    model(x).sum().backward()\n",
            why="Hogwild training shares CPU memory between processes: left alone",
        ),
        Valid(
            "import torch\n\n\n" "def step(model, x):\n" "    model(x).sum().backward()\n",
            why="no loop: a helper, not a training script",
        ),
        Valid(
            "import torch_xla\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n\n\n"
            "def train(model, loader):\n"
            "    ddp_model = DDP(model)\n"
            "    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1)\n"
            "    for x, y in loader:\n"
            "        loss_fn(ddp_model(x), y).backward()\n"
            "        torch_xla.sync()\n",
            why="already an XLA script (its tensors come from an XLA loader): left alone",
        ),
    ]

    INVALID = [
        Invalid(
            "import torch\n\n"
            "model = torch.nn.Linear(4, 1)\n"
            "model.train()\n"
            "for pair in pairs:\n"
            "    with open_batch(pair) as x:\n"
            "        model(x).sum().backward()\n",
            "import torch\n\n"
            "model = torch.nn.Linear(4, 1)\n"
            "model.train()\n"
            "for pair in pairs:\n"
            "    with open_batch(pair) as x:\n"
            "        # TODO(tpu-migrate): TPU281 no device code, and a model input whose origin "
            "tpu-migrate cannot follow\n"
            "        model(x).sum().backward()\n",
            findings=[FINDING],
            why="an input the rule cannot follow: nothing is half-moved",
        ),
        Invalid(
            "import torch\n\n"
            "model = build_model()\n"
            "opt = torch.optim.AdamW(model.parameters())\n"
            "for batch in loader:\n"
            "    model(**batch).loss.backward()\n"
            "    opt.step()\n",
            "import torch\n\n"
            "model = build_model()\n"
            "opt = torch.optim.AdamW(model.parameters())\n"
            "for batch in loader:\n"
            "    # TODO(tpu-migrate): TPU281 no device code, and a model input whose origin "
            "tpu-migrate cannot follow\n"
            "    model(**batch).loss.backward()\n"
            "    opt.step()\n",
            findings=[FINDING],
            why="unpacked arguments: which of them are tensors is not known",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self.plan = Plan()

    # ------------------------------------------------------------------ planning
    def visit_Module(self, node: cst.Module) -> bool:
        self.index = ModuleIndex(self, node)
        backwards = [
            call
            for call in self.index.calls
            if isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "backward"
            and self._step_loop_of(call) is not None
        ]
        if not backwards or self._places_tensors() or not self.imports_module("torch"):
            return False
        if self._mentions_device_code():
            return False
        models = self._models()
        if not models:
            return False
        try:
            self.plan = self._plan(models)
        except Unplaceable as unplaceable:
            self.flag(unplaceable.node, FINDING, str(self.FINDINGS[FINDING]))
            return True  # (the marker goes in when the statement is left)
        self.require_import(TORCH_XLA)
        plan = self.plan
        self.record_rewrite(
            1
            + len(plan.constructors)
            + len(plan.factories)
            + len(plan.numpy_reads)
            + len(plan.before)
            + len(plan.after)
        )
        return True

    def _step_loop_of(self, backward: cst.Call) -> cst.For | cst.While | None:
        """The training loop ``backward`` runs in: the loop around it, or the loop around the
        function it is in when that function is defined in a loop (the closure handed to
        ``optimizer.step(closure)`` each step)."""
        loop = self.index.training_loop_of(backward)
        owner = self.index.owner(backward)
        if loop is None and isinstance(owner, cst.FunctionDef):
            loop = self.index.training_loop_of(owner)
        return loop

    def _mentions_device_code(self) -> bool:
        """One of ``DEVICE_WORDS`` is an identifier of the code: it (or a framework) places
        tensors already, or is on XLA (``may_act`` asks the same of Python's parser)."""
        return any(
            type(node) is cst.Name and node.value in DEVICE_WORDS for node in self.index.nodes
        )

    def _places_tensors(self) -> bool:
        """The code already chooses where tensors live: a ``.to()`` with more than a dtype."""
        for call in self.index.calls:
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "to":
                if not all(self._is_dtype_argument(arg) for arg in call.args):
                    return True
        return False

    def _is_dtype_argument(self, arg: cst.Arg) -> bool:
        if arg.keyword is not None:
            return arg.keyword.value in NON_DEVICE_TO_KEYWORDS
        return not isinstance(arg.value, cst.Call) and any(
            name.startswith("torch.") for name in self.qualified_names(arg.value)
        )

    def _models(self) -> dict[str, list[cst.Call]]:
        """Model name -> the calls that build it: names asked for a module's methods and called,
        bound by calls that are not optimizers, loaders or tensor factories."""
        asked = {
            call.func.value.value
            for call in self.index.calls
            if isinstance(call.func, cst.Attribute)
            and call.func.attr.value in MODULE_METHODS
            and isinstance(call.func.value, cst.Name)
            and not named_like_optimizer(call.func.value)
        }
        called = {call.func.value for call in self.index.calls if isinstance(call.func, cst.Name)}
        models: dict[str, list[cst.Call]] = {}
        for binding in self.index.all_bindings:
            target, value = binding.target, binding.value
            if (
                isinstance(target, cst.Name)
                and target.value in asked & called
                and isinstance(value, cst.Call)
                and not self._builds_non_model(value)
            ):
                models.setdefault(target.value, []).append(value)
        return models

    def _builds_non_model(self, call: cst.Call) -> bool:
        return any(
            name.startswith("torch.") and not name.startswith("torch.nn.")
            for name in self.qualified_names(call.func)
        )

    def _plan(self, models: dict[str, list[cst.Call]]) -> Plan:
        plan = Plan()
        for values in models.values():
            plan.constructors |= {id(value) for value in values}
        for call in self.index.calls:
            if isinstance(call.func, cst.Name) and call.func.value in models:
                for fed in self._fed_with(call):
                    for root in _tensor_roots(fed):
                        self._place(root, fed, models, plan)
            elif (
                isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "numpy"
                and not call.args
                and not _is_cpu_call(call.func.value)
            ):
                plan.numpy_reads.add(id(call))
        return plan

    def _fed_with(self, model_call: cst.Call) -> list[cst.BaseExpression]:
        """The model call's arguments, and what its output is combined with:
        ``criterion(model(x), y)``, ``(net(x) - y) ** 2``, ``out = model(x)`` ...
        ``criterion(out, y)``."""
        if any(arg.star for arg in model_call.args):  # ``model(**batch)``: what is in it?
            raise Unplaceable(model_call, "unpacked arguments")
        fed = [arg.value for arg in model_call.args]
        outputs = [model_call]
        statement = self.index.statement_of(model_call)
        names: set[str] = set()
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and small.value is model_call:
                    for target in small.targets:
                        names |= set(names_in_target(target.target))
        if names:
            owner = self.index.owner(model_call)
            outputs += [
                node
                for node in self.index.nodes
                if isinstance(node, cst.Name)
                and node.value in names
                and self.index.owner(node) is owner
                and self._passed_on(node)
            ]
        for output in outputs:
            fed += self._combined_with(output)
        return fed

    def _passed_on(self, output: cst.Name) -> cst.CSTNode | None:
        """The argument ``output`` (or a slice of it: ``criterion(pred[:, :-n], y)``) is."""
        parent = self.index.parent(output)
        if isinstance(parent, cst.Subscript) and parent.value is output:
            parent = self.index.parent(parent)
        return parent if isinstance(parent, cst.Arg) else None

    def _combined_with(self, output: cst.CSTNode) -> list[cst.BaseExpression]:
        """The operands ``output`` meets on its way up to its statement."""
        partners: list[cst.BaseExpression] = []
        child = output
        for ancestor in self.index.ancestors(output):
            if isinstance(ancestor, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                break
            if isinstance(ancestor, cst.Call):
                partners += [
                    arg.value for arg in ancestor.args if arg is not child and not arg.star
                ]
            elif isinstance(ancestor, cst.BinaryOperation):
                partners.append(ancestor.right if child is ancestor.left else ancestor.left)
            child = ancestor
        return partners

    def _place(self, root, use: cst.CSTNode, models, plan: Plan) -> None:
        """Plan the move of one tensor ``root`` that the code at ``use`` feeds to a model."""
        if isinstance(root, cst.Call):
            if self._is_factory(root) and not _has_keyword(root, DEVICE_NAME):
                plan.factories.add(id(root))
            return
        name = root.value
        if name in models or name == "self":
            return
        index = self.index
        anchor = index.statement_of(use)
        loops = index.loops_around(use)
        for loop in loops:
            if isinstance(loop, cst.For) and name in names_in_target(loop.target):
                if not isinstance(loop.body, cst.IndentedBlock):  # ``for x in xs: model(x)``
                    raise Unplaceable(use, name)
                plan.move(plan.before, loop.body.body[0], name)
                return
            if self._bindings_in(name, loop):
                break
            anchor = loop
        owner = index.owner(use)
        bindings = self._visible_bindings(name, owner)
        if bindings is None:
            if _is_parameter(owner, name):
                plan.move(plan.before, anchor, name)
                return
            raise Unplaceable(use, name)
        if not bindings or any(self._not_a_tensor(b.value, models) for b in bindings):
            return
        last = bindings[-1]
        if last.owner is not owner:  # a global read in a function: move it where it is bound
            plan.move(plan.after, last.statement, name)
            return
        in_step = any(_contains(loop.body, last.statement) for loop in loops)
        if in_step:
            roots = _tensor_roots(last.value)
            factories = [r for r in roots if isinstance(r, cst.Call) and self._is_factory(r)]
            if factories and len(factories) == len(roots):  # built in the step: on the device
                for factory in factories:
                    if not _has_keyword(factory, DEVICE_NAME):
                        plan.factories.add(id(factory))
                return
        # The step's data as it arrives (or data used once, outside any loop), unless the CPU
        # reads it in between; data a loop reuses moves once, before the loop.
        if (
            (in_step or not loops)
            and index.runs_after(last.statement, use)
            and not self._read_between(name, last.statement, anchor)
        ):
            plan.move(plan.after, last.statement, name)
            return
        plan.move(plan.before, anchor, name)

    def _bindings_in(self, name: str, loop: cst.CSTNode):
        return [
            b
            for b in self.index.all_bindings
            if name in names_in_target(b.target) and _contains(loop.body, b.statement)
        ]

    def _visible_bindings(self, name: str, owner: cst.CSTNode):
        """The assignments of ``name`` that code in ``owner`` sees (its own, else those of the
        functions it is defined in, else the module's), in source order; [] for a function or
        class of the module, None when there are none."""
        scopes = [owner]
        while scopes[-1] is not self.index.module:
            scopes.append(self.index.owner(scopes[-1]))
        for scope in scopes:
            found = [
                b
                for b in self.index.all_bindings
                if b.owner is scope and name in names_in_target(b.target)
            ]
            if found:
                return found
            if _is_parameter(scope, name):
                return None
        defined = any(
            isinstance(statement, (cst.FunctionDef, cst.ClassDef)) and statement.name.value == name
            for statement in self.index.module.body
        )
        return [] if defined else None

    def _read_between(self, name: str, first: cst.CSTNode, anchor: cst.CSTNode) -> bool:
        """A statement between ``first`` and the one holding ``anchor`` (same body) reads
        ``name``: moving it right after ``first`` would move that read to the device too."""
        place = self.index.block_and_index(first)
        if place is None:
            return True
        block, at = place
        for statement in block.body[at + 1 :]:  # type: ignore[attr-defined]
            if statement is anchor or _contains(statement, anchor):
                return False
            if any(isinstance(n, cst.Name) and n.value == name for n in walk_code(statement)):
                return True
        return True

    def _not_a_tensor(self, value: cst.BaseExpression, models) -> bool:
        if isinstance(value, NOT_TENSOR_VALUES):
            return True
        return any(isinstance(n, cst.Name) and n.value in models for n in walk_code(value))

    def _is_factory(self, call: cst.Call) -> bool:
        return any(
            name.count(".") == 1 and name.startswith("torch.") and name[6:] in FACTORIES
            for name in self.qualified_names(call.func)
        )

    # ------------------------------------------------------------------ rewriting
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        plan = self.plan
        key = id(original_node)
        if key in plan.factories:
            updated_node = with_device(updated_node)
        if key in plan.numpy_reads:
            receiver = updated_node.func.value  # type: ignore[attr-defined]
            cpu = cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name("cpu")))
            updated_node = updated_node.with_changes(
                func=updated_node.func.with_changes(value=cpu)  # type: ignore[attr-defined]
            )
        if key in plan.constructors:
            updated_node = cst.Call(
                func=cst.Attribute(value=updated_node, attr=cst.Name("to")),
                args=[cst.Arg(cst.Name(DEVICE_NAME))],
            )
        return updated_node

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return updated_node.with_changes(body=self._with_moves(original_node, updated_node))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self.plan.constructors:
            return updated_node
        body = self._with_moves(original_node, updated_node)
        device = new_statement(f"{DEVICE_NAME} = torch_xla.device()").with_changes(
            leading_lines=[cst.EmptyLine()]
        )
        at = after_imports(body)
        body[at:at] = [device]
        return updated_node.with_changes(body=body)

    def _with_moves(self, original: cst.CSTNode, updated: cst.CSTNode) -> list:
        plan = self.plan
        body: list = []
        for old, new in zip(original.body, updated.body):  # type: ignore[attr-defined]
            before = plan.before.get(id(old))
            if before is not None:
                move = _move_statement(before[1])
                body.append(move.with_changes(leading_lines=new.leading_lines))
                new = new.with_changes(leading_lines=[])
            body.append(new)
            after = plan.after.get(id(old))
            if after is not None:
                body.append(_move_statement(after[1]))
        return body


def _move_statement(names: list[str]) -> cst.SimpleStatementLine:
    moved = ", ".join(f"{name}.to({DEVICE_NAME})" for name in names)
    return new_statement(f"{', '.join(names)} = {moved}")


def with_device(call: cst.Call) -> cst.Call:
    return with_keyword_argument(call, DEVICE_NAME, cst.Name(DEVICE_NAME))


def _tensor_roots(expr: cst.BaseExpression) -> list[cst.Name | cst.Call]:
    """The names (and the calls building tensors) a tensor expression starts from: ``x`` in
    ``x.view(-1).float()``, both in ``X + noise``; literals and other shapes are not followed."""
    if isinstance(expr, cst.Name):
        return [expr]
    if isinstance(expr, cst.BinaryOperation):
        return [*_tensor_roots(expr.left), *_tensor_roots(expr.right)]
    if isinstance(expr, cst.UnaryOperation):
        return _tensor_roots(expr.expression)
    if isinstance(expr, cst.Call):
        if isinstance(expr.func, cst.Attribute) and not _is_module_path(expr.func.value):
            return _tensor_roots(expr.func.value)
        return [expr]
    if isinstance(expr, cst.Attribute) and expr.attr.value in TENSOR_ATTRIBUTES:
        return _tensor_roots(expr.value)
    return []


def _is_module_path(expr: cst.BaseExpression) -> bool:
    """``torch`` / ``torch.nn.functional``: the receiver of a function, not of a method."""
    name = expr
    while isinstance(name, cst.Attribute):
        name = name.value
    return isinstance(name, cst.Name) and name.value in {"torch", "F", "nn", "np", "numpy"}


def _is_cpu_call(expr: cst.BaseExpression) -> bool:
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "cpu"
    )


def _has_keyword(call: cst.Call, keyword: str) -> bool:
    return any(arg.keyword is not None and arg.keyword.value == keyword for arg in call.args)


def _is_parameter(owner: cst.CSTNode, name: str) -> bool:
    if not isinstance(owner, cst.FunctionDef):
        return False
    params = owner.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            every.append(star)
    return any(param.name.value == name for param in every)


def _contains(block: cst.CSTNode, node: cst.CSTNode) -> bool:
    return any(candidate is node for candidate in walk_code(block))
