"""Who owns the loop: the objects and the code a training framework manages.

Accelerate, Lightning (its Trainer and Fabric) and the Hugging Face ``Trainer`` each have a TPU
path of their own: they place the model and the batches, step the optimizer the XLA way and cut
the graph. Rewriting what they manage as if it were a hand-written loop does their work a second
time or fights it (a ``.to(device)`` on a model before ``accelerator.prepare``,
``xm.optimizer_step`` on a prepared optimizer, whose wrapper already reduces the gradients and
steps, ``torch_xla.sync()`` in a loop over a prepared loader). The loop rules ask this module what
is the framework's:

- managed objects: what a file hands to a framework and what the framework hands back,
  ``model, optimizer, loader = accelerator.prepare(model, optimizer, loader)`` (and the other
  ``prepare_*`` methods), Fabric's ``setup*`` methods, ``trainer.fit(model, train_loader)`` and the
  other runs of a Lightning Trainer, ``Trainer(model=model, optimizers=(opt, sched), ...)`` of
  transformers. A parameter handed over is followed into the calls of this file that pass it
  (``def train(model): accelerator.prepare(model)`` manages what ``train(Net())``'s caller built);
- framework code: the methods of a ``LightningModule`` or ``LightningDataModule`` (Lightning calls
  them inside its own loop, on its device) and of a subclass of a transformers ``Trainer``, and the
  loops that iterate a managed loader.

Each framework has a device for the code it runs: ``self.device`` in a LightningModule,
``self.args.device`` in a Trainer subclass, ``accelerator.device`` / ``fabric.device`` where an
Accelerator or a Fabric is in scope.

Frameworks are told apart by the qualified names of their classes, so ``import lightning as L``,
``import pytorch_lightning as pl`` and ``from lightning.pytorch import LightningModule`` are all
Lightning; a class of this file subclassing one of them counts as one.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Iterable, Iterator

import libcst as cst

from ._base import TpuCodemod, dotted_name
from ._loops import ModuleIndex, last_identifier, positional_arguments, walk_code

ACCELERATE = "Accelerate"
LIGHTNING = "Lightning"
HF_TRAINER = "the HF Trainer"

LIGHTNING_PACKAGES = ("lightning", "pytorch_lightning", "lightning_fabric")
HF_PACKAGES = ("transformers", "trl")
PACKAGES = ("accelerate", *LIGHTNING_PACKAGES, *HF_PACKAGES)


def uses_a_framework(rule: TpuCodemod) -> bool:
    """Whether the module ``rule`` is on imports Accelerate, Lightning or transformers."""
    return any(rule.imports_module(package) for package in PACKAGES)


@dataclass(frozen=True)
class FrameworkClass:
    """A framework class, recognised by the first and last parts of its qualified name."""

    framework: str
    packages: tuple[str, ...]
    names: tuple[str, ...]  # last parts that match exactly...
    suffix: str = ""  # ...or end with this (``Seq2SeqTrainer``, ``SFTTrainer``)

    def matches(self, qualified_name: str) -> bool:
        parts = qualified_name.split(".")
        if len(parts) < 2 or parts[0] not in self.packages:
            return False
        last = parts[-1]
        return last in self.names or bool(self.suffix and last.endswith(self.suffix))


ACCELERATOR = FrameworkClass(ACCELERATE, ("accelerate",), ("Accelerator",))
FABRIC = FrameworkClass(LIGHTNING, LIGHTNING_PACKAGES, ("Fabric",))
LIGHTNING_TRAINER = FrameworkClass(LIGHTNING, LIGHTNING_PACKAGES, ("Trainer",))
LIGHTNING_MODULE = FrameworkClass(
    LIGHTNING, LIGHTNING_PACKAGES, ("LightningModule", "LightningDataModule")
)
HF_TRAINER_CLASS = FrameworkClass(HF_TRAINER, HF_PACKAGES, (), suffix="Trainer")

# The methods through which a framework takes objects over, by the class of their receiver: the
# positional arguments (and the results) are the framework's from then on.
TAKING_OVER = {
    ACCELERATOR: frozenset(
        {
            "prepare",
            "prepare_model",
            "prepare_optimizer",
            "prepare_data_loader",
            "prepare_scheduler",
        }
    ),
    FABRIC: frozenset({"setup", "setup_module", "setup_optimizers", "setup_dataloaders"}),
    LIGHTNING_TRAINER: frozenset({"fit", "validate", "test", "predict"}),
}
# Keyword arguments a Lightning Trainer's runs take loaders (and the module) by.
LIGHTNING_RUN_KEYWORDS = frozenset(
    {"model", "train_dataloaders", "val_dataloaders", "dataloaders", "datamodule"}
)
# Keyword arguments of a transformers Trainer that hand it objects it places and steps.
HF_TRAINER_KEYWORDS = frozenset({"model", "optimizers", "model_init"})
# A receiver of one of the methods above whose assignment this file does not show (a parameter,
# an attribute set elsewhere) is taken for the framework's object when its name says so.
RECEIVER_WORDS = {ACCELERATOR: "accelerator", FABRIC: "fabric", LIGHTNING_TRAINER: "trainer"}
# How code run by a framework names the device it runs on.
DEVICE_IN_METHODS = {LIGHTNING_MODULE: "self.device", HF_TRAINER_CLASS: "self.args.device"}
# How many calls deep a parameter handed to a framework is followed back to its callers.
CALLER_DEPTH = 2


class Frameworks:
    """What the frameworks of one module manage, read off the tree a rule's pass started from.

    Build it with ``Frameworks.of(rule, index)``: a file that imports no framework gets an
    instance that answers "nothing" without looking further."""

    def __init__(self, rule: TpuCodemod, index: ModuleIndex, active: bool) -> None:
        self.rule = rule
        # the index keeps this instance (a cached property): a weak link back spares the cycle
        # collector the pair once the rule's pass drops the index
        self._index = weakref.ref(index)
        self.active = active
        self._local_classes: dict[int, FrameworkClass] = {}  # id(ClassDef) -> what it subclasses
        self._managed: dict[tuple[int, str], str] = {}  # (id(owner), dotted name) -> framework
        self._instances: dict[tuple[int, str], FrameworkClass] = {}
        self._handed: dict[int, str] = {}  # id(expression handed to a framework) -> framework
        if active:
            self._find_local_classes()
            self._find_instances()
            self._find_managed()

    @classmethod
    def of(cls, rule: TpuCodemod, index: ModuleIndex) -> "Frameworks":
        return cls(rule, index, uses_a_framework(rule))

    @property
    def index(self) -> ModuleIndex:
        return self._index()

    # ------------------------------------------------------------------ questions
    def manages(self, expr: cst.BaseExpression) -> str | None:
        """The framework that manages the object ``expr`` names (a name, ``self.x``, or an
        attribute of one of them: ``model.encoder``), else None."""
        if not self._managed:
            return None
        dotted = dotted_name(expr)
        if dotted is None:
            return None
        owner = self._owner_key(expr, dotted)
        parts = dotted.split(".")
        for end in range(len(parts), 0, -1):
            found = self._managed.get((owner, ".".join(parts[:end])))
            if found is not None:
                return found
        return None

    def manages_value(self, value: cst.BaseExpression) -> str | None:
        """The framework that takes over what ``value`` evaluates to: ``value`` is handed to it
        as it stands (``trainer.fit(model, DataLoader(...))``), names a managed object, or is
        what a managed name is assigned (``model = Net().cuda()`` before
        ``accelerator.prepare(model)``)."""
        if not self.active:
            return None
        found = self._handed.get(id(value)) or self.manages(value)
        if found is not None:
            return found
        statement = self.index.parent(value)
        if isinstance(statement, cst.Assign) and statement.value is value:
            targets = [t.target for t in statement.targets]
        elif isinstance(statement, cst.AnnAssign) and statement.value is value:
            targets = [statement.target]
        else:
            return None
        return next((f for f in map(self.manages, targets) if f is not None), None)

    def owns_code(self, node: cst.CSTNode) -> str | None:
        """The framework that runs the code ``node`` is in: a method of one of its classes (and
        what is nested in it), or the body of a loop over a loader it manages."""
        if not self.active:
            return None
        for ancestor in self.index.ancestors(node):
            if isinstance(ancestor, cst.For) and self.iterates_managed_loader(ancestor):
                return self.manages(self.index.unwrap_iterable(ancestor.iter)[0])
            if isinstance(ancestor, cst.ClassDef):
                kind = self._local_classes.get(id(ancestor))
                if kind is not None:
                    return kind.framework
        return None

    def iterates_managed_loader(self, loop: cst.CSTNode) -> bool:
        if not (self.active and isinstance(loop, cst.For)):
            return False
        loader, _ = self.index.unwrap_iterable(loop.iter)
        return self.manages(loader) is not None

    def device_for(self, node: cst.CSTNode) -> cst.BaseExpression | None:
        """How code at ``node`` names the device its framework runs it on: ``self.device`` in a
        LightningModule's method, ``self.args.device`` in a Trainer subclass's, ``accelerator.device``
        (``fabric.device``) where this file binds an Accelerator (a Fabric) that ``node``'s
        function can see; None outside framework code."""
        if not self.active:
            return None
        for ancestor in self.index.ancestors(node):
            if isinstance(ancestor, cst.ClassDef):
                kind = self._local_classes.get(id(ancestor))
                spelling = DEVICE_IN_METHODS.get(kind) if kind else None
                if spelling is not None:
                    return cst.parse_expression(spelling)
        instance = self._visible_instance(node, (ACCELERATOR, FABRIC))
        return cst.parse_expression(f"{instance}.device") if instance else None

    # ------------------------------------------------------------------ classes
    def is_class(self, func: cst.BaseExpression, kind: FrameworkClass) -> bool:
        """``func`` names ``kind`` (imports resolved) or a class of this file subclassing it."""
        if any(kind.matches(name) for name in self.rule.qualified_names(func)):
            return True
        local = self._local_class(func)
        return local is not None and self._local_classes.get(id(local)) is kind

    def _find_local_classes(self) -> None:
        """Classes of this file subclassing a framework class, directly or through another."""
        kinds = (LIGHTNING_MODULE, HF_TRAINER_CLASS, LIGHTNING_TRAINER, ACCELERATOR, FABRIC)
        changed = True
        while changed:  # a base defined below its subclass is found on the next round
            changed = False
            for cls in self.index.classes:
                if id(cls) in self._local_classes:
                    continue
                for base in cls.bases:
                    kind = next((k for k in kinds if self.is_class(base.value, k)), None)
                    if kind is not None:
                        self._local_classes[id(cls)] = kind
                        changed = True
                        break

    def _local_class(self, func: cst.BaseExpression) -> cst.ClassDef | None:
        if not isinstance(func, cst.Name):
            return None
        bound = self.rule.bindings_of(func)
        nodes = [getattr(a, "node", None) for a in bound[1]] if bound else []
        return nodes[0] if len(nodes) == 1 and isinstance(nodes[0], cst.ClassDef) else None

    # ------------------------------------------------------------------ instances
    def _find_instances(self) -> None:
        """``accelerator = Accelerator(...)``, ``self.fabric = L.Fabric(...)``, ``trainer =
        L.Trainer(...)``: the names this file binds to framework objects, in their owner."""
        for binding in self.index.all_bindings:
            value = binding.value
            if not isinstance(value, cst.Call):
                continue
            dotted = dotted_name(binding.target)
            if dotted is None:
                continue
            for kind in TAKING_OVER:
                if self.is_class(value.func, kind):
                    owner = self._owner_key(binding.target, dotted)
                    self._instances[(owner, dotted)] = kind
                    break

    def _receiver_kind(self, receiver: cst.BaseExpression) -> FrameworkClass | None:
        dotted = dotted_name(receiver)
        if dotted is None:
            return None
        found = self._instances.get((self._owner_key(receiver, dotted), dotted))
        if found is not None:
            return found
        name = last_identifier(receiver) or ""
        if self.index.binding_values(receiver):
            return None  # bound here to something this module does not take for a framework
        return next((kind for kind, word in RECEIVER_WORDS.items() if word in name.lower()), None)

    def _visible_instance(self, node: cst.CSTNode, kinds: Iterable[FrameworkClass]) -> str | None:
        owners = [id(a) for a in self.index.ancestors(node) if isinstance(a, cst.FunctionDef)]
        owners.append(id(self.index.module))
        for owner in owners:
            for (instance_owner, name), kind in self._instances.items():  # in source order
                if instance_owner == owner and kind in kinds and not name.startswith("self."):
                    return name
        return None

    # ------------------------------------------------------------------ managed objects
    def _find_managed(self) -> None:
        handed_over: list[tuple[cst.BaseExpression, str]] = []
        for call in self.index.calls:
            for expr, framework in self._taken_over_by(call):
                handed_over.append((expr, framework))
        for expr, framework in handed_over:
            self._handed[id(expr)] = framework
            self._manage(expr, framework, CALLER_DEPTH)
        if self._managed:
            self._follow_into_calls()

    def _follow_into_calls(self) -> None:
        """A managed object passed to a function of this file is managed there too, under its
        parameter's name: ``train_epoch(model, train_loader)`` after ``accelerator.prepare``."""
        for _ in range(CALLER_DEPTH):
            for call in self.index.calls:
                function = self._local_function(call.func)
                if function is None:
                    continue
                for value, parameter in _parameters_given(call, function):
                    framework = self.manages(value)
                    if framework is not None:
                        self._manage(parameter.name, framework, 0)

    def _taken_over_by(self, call: cst.Call) -> Iterator[tuple[cst.BaseExpression, str]]:
        """The expressions ``call`` hands to a framework (and the targets it assigns them to)."""
        func = call.func
        if self.is_class(func, HF_TRAINER_CLASS):
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value in HF_TRAINER_KEYWORDS:
                    yield from ((e, HF_TRAINER) for e in _elements(arg.value))
            return
        if not isinstance(func, cst.Attribute):
            return
        kind = self._receiver_kind(func.value)
        if kind is None or func.attr.value not in TAKING_OVER[kind]:
            return
        taken = [arg.value for arg in positional_arguments(call)]
        if kind is LIGHTNING_TRAINER:
            taken += [
                arg.value
                for arg in call.args
                if arg.keyword is not None and arg.keyword.value in LIGHTNING_RUN_KEYWORDS
            ]
        else:
            taken += list(self._assigned_from(call))
        for expr in taken:
            yield from ((e, kind.framework) for e in _elements(expr))

    def _assigned_from(self, call: cst.Call) -> Iterator[cst.BaseExpression]:
        statement = self.index.parent(call)
        if isinstance(statement, (cst.Assign, cst.AnnAssign)) and statement.value is call:
            targets = (
                [t.target for t in statement.targets]
                if isinstance(statement, cst.Assign)
                else [statement.target]
            )
            for target in targets:
                yield target

    def _manage(self, expr: cst.BaseExpression, framework: str, depth: int) -> None:
        dotted = dotted_name(expr)
        if dotted is None:
            return
        self._managed[(self._owner_key(expr, dotted), dotted)] = framework
        if depth == 0 or not isinstance(expr, cst.Name):
            return
        source = self.index.source_of(expr)
        if source is not None and source.parameter is not None and source.function is not None:
            for passed in self.index.call_arguments(source.function, source.parameter):
                self._manage(passed, framework, depth - 1)
        for returned in self._returned_into(expr):
            self._manage(returned, framework, depth - 1)

    def _returned_into(self, name: cst.Name) -> Iterator[cst.BaseExpression]:
        """What the functions of this file return into ``name``: ``train_loader`` in
        ``train_loader, val_loader = make_loaders()`` is what ``make_loaders`` returns first."""
        bound = self.rule.bindings_of(name)
        for assignment in bound[1] if bound else ():
            target = getattr(assignment, "node", None)
            position, statement = _position_in_target(target, self.index)
            if not isinstance(statement, cst.Assign) or not isinstance(statement.value, cst.Call):
                continue
            func = statement.value.func
            function = self._local_function(func)
            if function is None:
                continue
            for node in walk_code(function.body):
                if isinstance(node, cst.Return) and node.value is not None:
                    value = node.value
                    if position is None:
                        yield value
                    elif isinstance(value, (cst.Tuple, cst.List)) and position < len(
                        value.elements
                    ):
                        yield value.elements[position].value

    def _local_function(self, func: cst.BaseExpression) -> cst.FunctionDef | None:
        if not isinstance(func, cst.Name):
            return None
        bound = self.rule.bindings_of(func)
        nodes = [getattr(a, "node", None) for a in bound[1]] if bound else []
        return nodes[0] if len(nodes) == 1 and isinstance(nodes[0], cst.FunctionDef) else None

    def _owner_key(self, expr: cst.CSTNode, dotted: str) -> int:
        """Where a dotted name lives: ``self.x`` in its class; a name (or ``name.attr``) in the
        function, class or module whose scope binds the name, so that a module global read in a
        function is the module's."""
        owner = self.index.owner(expr)
        if dotted.startswith("self."):
            cls = self.index.enclosing_class(owner)
            return id(cls) if cls is not None else id(owner)
        root = expr
        while isinstance(root, cst.Attribute):
            root = root.value
        bound = self.rule.bindings_of(root) if isinstance(root, cst.Name) else None
        scopes = {id(a.scope): a.scope for a in bound[1]} if bound else {}
        if len(scopes) == 1:
            node = getattr(next(iter(scopes.values())), "node", None)  # the global scope has none
            return id(node if node is not None else self.index.module)
        return id(owner)


def _parameters_given(
    call: cst.Call, function: cst.FunctionDef
) -> Iterator[tuple[cst.BaseExpression, cst.Param]]:
    """Each argument of ``call`` with the parameter of ``function`` it binds (up to the first
    ``*args`` or ``**kwargs`` of the call)."""
    params = function.params
    positional = [*params.posonly_params, *params.params]
    by_name = {p.name.value: p for p in [*positional, *params.kwonly_params]}
    for position, arg in enumerate(call.args):
        if arg.star:
            return
        if arg.keyword is not None:
            if arg.keyword.value in by_name:
                yield arg.value, by_name[arg.keyword.value]
        elif position < len(positional):
            yield arg.value, positional[position]


def _position_in_target(target, index: ModuleIndex) -> tuple[int | None, cst.CSTNode | None]:
    """For a name assigned by ``a, b = value``: its position in the tuple (None when it is the
    whole target) and the assignment statement."""
    position = None
    parent = index.parent(target) if target is not None else None
    if isinstance(parent, cst.Element):
        container = index.parent(parent)
        if isinstance(container, (cst.Tuple, cst.List)):
            position = next(
                (i for i, element in enumerate(container.elements) if element is parent), None
            )
            parent = index.parent(container)
    if isinstance(parent, cst.AssignTarget):
        return position, index.parent(parent)
    return position, None


def _elements(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """``expr``, or the elements of a tuple or list of them (``optimizers=(opt, sched)``,
    ``model, opt = ...``)."""
    if isinstance(expr, (cst.Tuple, cst.List)):
        for element in expr.elements:
            if not isinstance(element, cst.StarredElement):
                yield from _elements(element.value)
    else:
        yield expr
