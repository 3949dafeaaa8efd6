"""Loops and loaders shared by TPU103 (parallel loader) and TPU102 (step boundary).

Everything here reads the *original* tree of a rule's pass (the one libcst computed metadata
for): a rule builds a ``ModuleIndex`` in ``visit_Module``, plans its edits from it, and applies
them in its ``leave_*`` methods by the identity of the original nodes (statement edits through
``_statements.StatementEdits``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Iterator, Sequence

import libcst as cst
from libcst.metadata import ScopeProvider

from ._base import TpuCodemod, children_reader, code_of, dotted_name, walk_all, walk_pruned
from migrate.fastcst.traversal import LAYOUT
from migrate.fastcst.facts import FileFacts

if TYPE_CHECKING:
    from ._frameworks import Frameworks

DATA_LOADERS = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")
MP_DEVICE_LOADERS = ("torch_xla.distributed.parallel_loader.MpDeviceLoader",)
XLA_DEVICE_CALLS = (
    "torch_xla.device",
    "torch_xla.torch_xla.device",
    "torch_xla.core.xla_model.xla_device",
)
XLA_OPTIMIZER_STEP = ("torch_xla.core.xla_model.optimizer_step",)
# Inside the tpu-migrate pipeline imports are added once at the end, so a name an earlier rule
# just wrote (``pl.MpDeviceLoader``) is not bound yet; it is recognised by its canonical spelling.
CANONICAL_SPELLINGS = {
    MP_DEVICE_LOADERS: ("pl.MpDeviceLoader", "MpDeviceLoader"),
    XLA_DEVICE_CALLS: ("torch_xla.device", "xm.xla_device"),
    XLA_OPTIMIZER_STEP: ("xm.optimizer_step",),
}
# Wrappers a batch loop puts around its loader -> True when the wrapper yields (index, batch).
ITERABLE_WRAPPERS = {
    "builtins.enumerate": True,
    "tqdm.tqdm": False,
    "tqdm.auto.tqdm": False,
    "tqdm.notebook.tqdm": False,
    "tqdm.std.tqdm": False,
    "itertools.islice": False,
}
# A loop whose iterable mentions one of these words walks parameters, gradients or optimizers,
# not batches: it is part of a training step, never the training loop itself.
BOOKKEEPING_WORDS = frozenset(
    {
        "param", "params", "parameters", "grad", "grads", "gradients",
        "opt", "opts", "optim", "optims", "optimizer", "optimizers", "optimiser", "optimisers",
        "scheduler", "schedulers",
    }
)  # fmt: skip
Owner = cst.FunctionDef | cst.Module
AUTOGRAD_FUNCTIONS = ("torch.autograd.backward", "torch.autograd.grad")
# A receiver named with one of these words (``opt_d``, ``optimizerG``, ``self.optimizers[i]``)
# is taken for an optimizer unless its assignment in this file says otherwise.
OPTIMIZER_WORDS = frozenset(
    {"opt", "opts", "optim", "optims", "optimizer", "optimizers", "optimiser", "optimisers"}
)
NOT_OPTIMIZER_WORDS = frozenset({"scheduler", "schedulers", "sched", "schedule"})


def identifier_words(name: str) -> set[str]:
    """``optimizerD`` -> {"optimizer", "d"}; ``train_loader`` -> {"train", "loader"}."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    return {word for word in spaced.split("_") if word}


def _counts_steps(iterable: cst.BaseExpression) -> bool:
    """``range(...)`` of a number, not of a collection's ``len(...)``."""
    return (
        isinstance(iterable, cst.Call)
        and isinstance(iterable.func, cst.Name)
        and iterable.func.value == "range"
        and not any(
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and node.func.value == "len"
            for node in walk_all(iterable)
        )
    )


def last_identifier(expr: cst.BaseExpression) -> str | None:
    """``optimizer`` for ``optimizer``, ``self.optimizer`` and ``self.optimizers[i]``."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Subscript):
        return last_identifier(expr.value)
    return None


def named_like_optimizer(expr: cst.BaseExpression) -> bool:
    """``opt_d.step()``'s receiver: named like an optimizer, not like a scheduler."""
    name = last_identifier(expr)
    words = identifier_words(name) if name else set()
    return not words.isdisjoint(OPTIMIZER_WORDS) and words.isdisjoint(NOT_OPTIMIZER_WORDS)


def may_contain_training_step(facts: FileFacts) -> bool:
    """What Python's parser can tell of a training step (TPU102's and TPU115's step markers):
    a backward pass, an autograd call, ``xm.optimizer_step``, or a ``.step()`` in a file that
    uses torch.optim or has an identifier named like an optimizer."""
    return (
        facts.calls("backward", "optimizer_step")
        or facts.uses(*AUTOGRAD_FUNCTIONS)
        or (
            facts.calls("step")
            and (facts.uses("torch.optim") or facts.has_word(_has_optimizer_words))
        )
    )


def _has_optimizer_words(name: str) -> bool:
    return not identifier_words(name).isdisjoint(OPTIMIZER_WORDS)


def refers_to(
    rule: TpuCodemod,
    node: cst.CSTNode,
    qualified: Sequence[str],
    spellings: Sequence[str] | None = None,
) -> bool:
    """``node`` names one of ``qualified`` (imports resolved), or is spelled the canonical way
    (``spellings``) while its root name is not bound yet: an import a previous rule asked for."""
    names = rule.qualified_names(node)
    if names:
        return not names.isdisjoint(qualified)
    if spellings is None:
        spellings = CANONICAL_SPELLINGS.get(tuple(qualified), ())
    return dotted_name(node) in spellings


def calls(
    rule: TpuCodemod,
    node: cst.CSTNode,
    qualified: Sequence[str],
    spellings: Sequence[str] | None = None,
) -> bool:
    return isinstance(node, cst.Call) and refers_to(rule, node.func, qualified, spellings)


def names_in_target(target: cst.CSTNode) -> list[str]:
    """The plain names a ``for``/assignment target binds (``i, (x, y)`` -> i, x, y)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in names_in_target(element.value)]
    return []


def is_per_device_loader_call(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "per_device_loader"
    )


def device_loader_device(call: cst.Call) -> str:
    """How the device of ``pl.MpDeviceLoader(loader, device)`` (or of the pre-2.0
    ``para_loader.per_device_loader(device)``) is spelled; ``torch_xla.device()`` when unsaid."""
    positional = positional_arguments(call)
    device_position = 0 if is_per_device_loader_call(call) else 1
    if len(positional) > device_position:
        return code_of(positional[device_position].value)
    keyword = next((a for a in call.args if a.keyword and a.keyword.value == "device"), None)
    return code_of(keyword.value) if keyword else "torch_xla.device()"


def in_generator(index: "ModuleIndex", loop: cst.For) -> bool:
    """``loop`` is in a generator function: a data pipeline stage re-yielding batches, not a
    consumer of them."""
    owner = index.owner(loop)
    return isinstance(owner, cst.FunctionDef) and any(
        isinstance(node, cst.Yield) for node in walk_code(owner.body)
    )


def positional_arguments(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


def without_items(items: Sequence, drop) -> list:
    """Call arguments or dict elements minus those ``drop`` selects; the new last item inherits
    the comma of the old last one, so ``f(a, b=1)`` -> ``f(a)`` and a multi-line call keeps its
    trailing comma."""
    kept = [item for item in items if not drop(item)]
    if kept and items and drop(items[-1]):
        kept[-1] = kept[-1].with_changes(comma=items[-1].comma)
    return kept


@dataclass(frozen=True)
class Binding:
    """``target = value`` somewhere in the module."""

    statement: cst.SimpleStatementLine
    target: cst.BaseExpression
    value: cst.BaseExpression
    owner: Owner


@dataclass(frozen=True)
class Source:
    """Where the object a name or ``self`` attribute refers to comes from."""

    bindings: tuple[Binding, ...] = ()
    parameter: cst.Param | None = None
    function: cst.FunctionDef | None = None  # the function owning ``parameter``


class ModuleIndex:
    """Parents, owners and plain assignments of one module, collected in a single walk."""

    def __init__(self, rule: TpuCodemod, module: cst.Module) -> None:
        self.rule = rule
        self.module = module
        self.parents: dict[int, cst.CSTNode] = {}
        self.bindings: dict[int, Binding] = {}  # id(target Name) -> its binding
        self.self_bindings: dict[tuple[int, str], list[Binding]] = {}  # (id(class), attr)
        self.all_bindings: list[Binding] = []
        self.nodes: list[cst.CSTNode] = []  # every node but layout, in source order (walk_all)
        self.calls: list[cst.Call] = []
        self.for_loops: list[cst.For] = []
        self.while_loops: list[cst.While] = []
        self.functions: list[cst.FunctionDef] = []
        self.classes: list[cst.ClassDef] = []
        self._callees: dict[tuple[bool | None, str], list[cst.Call]] | None = None
        self._collect()

    @functools.cached_property
    def frameworks(self) -> "Frameworks":
        """What the training frameworks this module uses manage (``_frameworks.py``)."""
        from ._frameworks import Frameworks  # it reads this index: imported when first asked

        return Frameworks.of(self.rule, self)

    def _collect(self) -> None:
        """The one walk: each node with its parent, the function (or module) that owns the
        code it is in, and the class around it."""
        pending: list[tuple] = [(self.module, None, self.module, None)]
        children_of = children_reader()
        while pending:
            node, parent, owner, cls = pending.pop()
            if parent is not None:
                self.parents[id(node)] = parent
            self.nodes.append(node)
            kind = type(node)  # (exact: libcst's node classes are final)
            if kind is cst.Call:
                self.calls.append(node)
            elif kind is cst.For:
                self.for_loops.append(node)
            elif kind is cst.While:
                self.while_loops.append(node)
            elif kind is cst.FunctionDef:
                self.functions.append(node)
                owner = node
            elif kind is cst.ClassDef:
                self.classes.append(node)
                cls = node
            elif kind is cst.SimpleStatementLine:
                for small in node.body:
                    for target, value in assigned_pairs(small):
                        self._record(Binding(node, target, value, owner), cls)
            pending.extend(
                (child, node, owner, cls)
                for child in reversed(children_of(node))
                if type(child) not in LAYOUT  # (no rule asks the parent of a layout node)
            )

    def _record(self, binding: Binding, cls: cst.ClassDef | None) -> None:
        self.all_bindings.append(binding)
        target = binding.target
        if isinstance(target, cst.Name):
            self.bindings[id(target)] = binding
        elif (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
            and isinstance(binding.owner, cst.FunctionDef)
            and cls is not None
        ):
            self.self_bindings.setdefault((id(cls), target.attr.value), []).append(binding)

    # ------------------------------------------------------------------ tree navigation
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(id(node))

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self.parent(node)
        while current is not None:
            yield current
            current = self.parent(current)

    def owner(self, node: cst.CSTNode) -> Owner:
        """The function (or the module) whose code ``node`` runs in."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.Module)):
                return ancestor
        return self.module

    def enclosing_class(self, function: Owner) -> cst.ClassDef | None:
        block = self.parent(function)
        holder = self.parent(block) if block is not None else None
        return holder if isinstance(holder, cst.ClassDef) else None

    def statement_of(self, node: cst.CSTNode) -> cst.BaseStatement | None:
        for candidate in (node, *self.ancestors(node)):
            if isinstance(candidate, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return candidate
        return None

    def loops_around(self, node: cst.CSTNode) -> list[cst.For | cst.While]:
        """Loops whose body (not header, not ``else:``) holds ``node`` in its own function,
        innermost first."""
        loops = []
        previous = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Module)):
                break
            if isinstance(ancestor, (cst.For, cst.While)) and previous is ancestor.body:
                loops.append(ancestor)
            previous = ancestor
        return loops

    def training_loop_of(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        """The innermost loop around ``node`` that is not a parameter/optimizer walk."""
        for loop in self.loops_around(node):
            if not self.is_bookkeeping_loop(loop):
                return loop
        return None

    def outermost_loop_of(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        loops = self.loops_around(node)
        return loops[-1] if loops else None

    def is_bookkeeping_loop(self, loop: cst.For | cst.While) -> bool:
        """A walk over parameters, gradients or optimizers (``for p in model.parameters()``,
        ``for g in opt.param_groups``), not a step loop. A count (``range(opt.steps)``, with
        ``opt`` the parsed arguments) is a step loop, unless it counts a collection
        (``range(len(params))``)."""
        if not isinstance(loop, cst.For) or _counts_steps(loop.iter):
            return False
        words: set[str] = set()
        for node in walk_all(loop.iter):
            if isinstance(node, cst.Name):
                words |= identifier_words(node.value)
        return not words.isdisjoint(BOOKKEEPING_WORDS)

    def block_and_index(self, statement: cst.CSTNode) -> tuple[cst.CSTNode, int] | None:
        """The body (IndentedBlock or Module) holding ``statement`` and its index there."""
        block = self.parent(statement)
        if isinstance(block, (cst.IndentedBlock, cst.Module)):
            for index, candidate in enumerate(block.body):
                if candidate is statement:
                    return block, index
        return None

    def runs_after(self, statement: cst.BaseStatement, node: cst.CSTNode) -> bool:
        """``node`` is in a statement that follows ``statement`` in the same body (or nested in
        one), so whenever ``node`` runs, ``statement`` ran just before in that body."""
        place = self.block_and_index(statement)
        if place is None:
            return False
        block, index = place
        for candidate in (node, *self.ancestors(node)):
            if self.parent(candidate) is block:
                later = block.body[index + 1 :]
                return any(candidate is other for other in later)
        return False

    # ------------------------------------------------------------------ what names refer to
    def source_of(self, ref: cst.BaseExpression) -> Source | None:
        """The assignments behind a name or ``self.attr``; None when they cannot be listed."""
        if isinstance(ref, cst.Name):
            return self._name_source(ref)
        if (
            isinstance(ref, cst.Attribute)
            and isinstance(ref.value, cst.Name)
            and ref.value.value == "self"
        ):
            cls = self.enclosing_class(self.owner(ref))
            found = self.self_bindings.get((id(cls), ref.attr.value)) if cls else None
            return Source(bindings=tuple(found)) if found else None
        return None

    def _name_source(self, name: cst.Name) -> Source | None:
        bound = self.rule.bindings_of(name)
        if bound is None:
            return None
        assignments = bound[1]
        if len(assignments) == 1 and isinstance(getattr(assignments[0], "node", None), cst.Param):
            param = assignments[0].node
            function = self.owner(param)
            if isinstance(function, cst.FunctionDef):
                return Source(parameter=param, function=function)
            return None
        found = [self.bindings.get(id(getattr(a, "node", None))) for a in assignments]
        if not found or any(binding is None for binding in found):
            return None
        return Source(bindings=tuple(found))  # type: ignore[arg-type]

    def binding_values(self, ref: cst.BaseExpression) -> list[cst.BaseExpression] | None:
        source = self.source_of(ref)
        if source is None or not source.bindings:
            return None
        return [binding.value for binding in source.bindings]

    def call_arguments(
        self, function: cst.FunctionDef, param: cst.Param
    ) -> list[cst.BaseExpression]:
        """What the calls of ``function`` in this module pass for ``param``."""
        passed = (self.argument_of(call, function, param) for call in self.calls_of(function))
        return [value for value in passed if value is not None]

    def argument_of(
        self, call: cst.Call, function: cst.FunctionDef, param: cst.Param
    ) -> cst.BaseExpression | None:
        """What ``call`` (a call of ``function``) passes for ``param``: by keyword or by
        position; None when it is not passed, or only through ``*args``."""
        positional = [*function.params.posonly_params, *function.params.params]
        index = next((i for i, p in enumerate(positional) if p is param), None)
        if self.enclosing_class(function) is not None and index is not None:
            index -= 1  # ``self.f(a)`` passes ``a`` as the second parameter
        for position, arg in enumerate(call.args):
            if arg.star:
                return None
            if arg.keyword is not None:
                if arg.keyword.value == param.name.value:
                    return arg.value
            elif position == index:
                return arg.value
        return None

    def calls_of(self, function: cst.FunctionDef) -> list[cst.Call]:
        """The calls of ``function`` in this module, in order: ``f(...)`` where ``f`` is bound to
        it, or ``self.f(...)`` in a method of its class."""
        owner_class = self.enclosing_class(function)
        method = owner_class is not None
        candidates = self._calls_by_name().get((method, function.name.value), ())
        if method:
            return [c for c in candidates if self.enclosing_class(self.owner(c)) is owner_class]
        return [c for c in candidates if self._is_bound_to(c.func, function)]

    def calls_through_instances(self, method: cst.FunctionDef) -> list[cst.Call]:
        """``obj.m(...)`` calls of a method ``m`` of a class of this file, ``obj`` being neither
        ``self`` nor an imported name: the calls that reach ``m`` when ``obj`` is an instance
        of its class (``trainer.train_step(batch)``). Which class ``obj`` belongs to is not
        followed: a method name two classes share gets the calls of both."""
        owner_class = self.enclosing_class(method)
        if owner_class is None:
            return []
        calls = []
        for call in self._calls_by_name().get((None, method.name.value), ()):
            receiver = call.func.value  # type: ignore[attr-defined]
            if self._is_imported(receiver):
                continue
            known = self._instance_of(receiver)
            if known is None or known is owner_class:
                calls.append(call)
        return calls

    def _instance_of(self, receiver: cst.BaseExpression) -> cst.ClassDef | None:
        """The class of this file ``receiver`` is an instance of, when every assignment of the
        name is a call of that one class (``net = Net(...)``); None when that is not known."""
        if not isinstance(receiver, cst.Name):
            return None
        bound = self.rule.bindings_of(receiver)
        classes = set()
        for assignment in bound[1] if bound is not None else ():
            value = self.rule.assigned_value(assignment)
            if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Name):
                return None
            made = self.rule.bindings_of(value.func)
            nodes = [getattr(a, "node", None) for a in made[1]] if made is not None else []
            if len(nodes) != 1 or not isinstance(nodes[0], cst.ClassDef):
                return None
            classes.add(nodes[0])
        return classes.pop() if len(classes) == 1 else None

    def _is_imported(self, receiver: cst.BaseExpression) -> bool:
        head = receiver
        while isinstance(head, cst.Attribute):
            head = head.value
        if not isinstance(head, cst.Name):
            return False
        bound = self.rule.bindings_of(head)
        return bound is not None and any(
            isinstance(getattr(a, "node", None), (cst.Import, cst.ImportFrom)) for a in bound[1]
        )

    def _calls_by_name(self) -> dict[tuple[bool | None, str], list[cst.Call]]:
        """The calls that may call a function, in order, by (is a ``self.`` method call, name);
        None for a method call on anything else. Asking every call about every function made
        rules quadratic in the file's size."""
        if self._callees is None:
            self._callees = {}
            for call in self.calls:
                func = call.func
                if isinstance(func, cst.Name):
                    self._callees.setdefault((False, func.value), []).append(call)
                elif (
                    isinstance(func, cst.Attribute)
                    and isinstance(func.value, cst.Name)
                    and func.value.value == "self"
                ):
                    self._callees.setdefault((True, func.attr.value), []).append(call)
                elif isinstance(func, cst.Attribute):
                    self._callees.setdefault((None, func.attr.value), []).append(call)
        return self._callees

    def _is_bound_to(self, name: cst.Name, function: cst.FunctionDef) -> bool:
        try:
            scope = self.rule.get_metadata(ScopeProvider, name)
        except KeyError:
            return False
        return (
            scope is not None
            and name.value in scope
            and any(getattr(a, "node", None) is function for a in scope[name.value])
        )

    # ------------------------------------------------------------------ loaders
    def unwrap_iterable(self, iterable: cst.BaseExpression) -> tuple[cst.BaseExpression, bool]:
        """The loader inside ``enumerate(tqdm(loader))``, and whether an index comes first."""
        indexed = False
        while isinstance(iterable, cst.Call):
            wrapper = next(
                (q for q in self.rule.qualified_names(iterable.func) if q in ITERABLE_WRAPPERS),
                None,
            )
            positional = positional_arguments(iterable)
            if wrapper is None or not positional:
                break
            indexed = indexed or ITERABLE_WRAPPERS[wrapper]
            iterable = positional[0].value
        return iterable, indexed

    def is_data_loader_call(self, node: cst.CSTNode) -> bool:
        return calls(self.rule, node, DATA_LOADERS)

    def is_device_loader_call(self, node: cst.CSTNode) -> bool:
        """``pl.MpDeviceLoader(...)``, or the pre-2.0 ``para_loader.per_device_loader(device)``."""
        return calls(self.rule, node, MP_DEVICE_LOADERS) or is_per_device_loader_call(node)

    def traces_to_data_loader(self, ref: cst.BaseExpression) -> bool:
        """A name or ``self`` attribute only ever assigned a ``DataLoader(...)``."""
        values = self.binding_values(ref)
        return bool(values) and all(self.is_data_loader_call(value) for value in values)

    def device_loader_call(self, ref: cst.BaseExpression, depth: int = 2) -> cst.Call | None:
        """The ``pl.MpDeviceLoader(...)`` call ``ref`` evaluates to, when that is certain: the
        call itself, a name or ``self`` attribute only ever assigned from one, or a parameter every
        caller in this module passes one for."""
        if self.is_device_loader_call(ref):
            return ref  # type: ignore[return-value]
        if depth == 0:
            return None
        source = self.source_of(ref)
        if source is None:
            return None
        if source.parameter is not None and source.function is not None:
            passed = self.call_arguments(source.function, source.parameter)
        else:
            passed = [binding.value for binding in source.bindings]
        found = [self.device_loader_call(value, depth - 1) for value in passed]
        if found and all(found):
            return found[0]
        return None

    def is_device_loop(self, loop: cst.CSTNode) -> bool:
        if not isinstance(loop, cst.For):
            return False
        loader, _ = self.unwrap_iterable(loop.iter)
        return self.device_loader_call(loader) is not None

    def xla_device_names(self) -> set[str]:
        """Dotted targets assigned from ``torch_xla.device()`` anywhere in the module."""
        names = set()
        for binding in self.all_bindings:
            target = dotted_name(binding.target)
            if target and calls(self.rule, binding.value, XLA_DEVICE_CALLS):
                names.add(target)
        return names


def assigned_pairs(small: cst.BaseSmallStatement) -> Iterator[tuple[cst.CSTNode, cst.CSTNode]]:
    """(target, value) pairs of a plain assignment, element-wise for ``a, b = x, y``."""
    if isinstance(small, cst.AnnAssign) and small.value is not None:
        yield small.target, small.value
    elif isinstance(small, cst.Assign):
        for assign_target in small.targets:
            target, value = assign_target.target, small.value
            if isinstance(target, (cst.Tuple, cst.List)) and isinstance(
                value, (cst.Tuple, cst.List)
            ):
                elements = list(zip(target.elements, value.elements))
                if len(target.elements) == len(value.elements) and not any(
                    isinstance(e, cst.StarredElement) for pair in elements for e in pair
                ):
                    for left, right in elements:
                        yield left.value, right.value
            else:
                yield target, value


def walk_code(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under ``node`` that runs as part of it (nested defs and classes excluded),
    layout aside (as ``walk_all``)."""
    return walk_pruned(node, _NOT_RUN_AS_PART)


_NOT_RUN_AS_PART = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda}) | LAYOUT


def new_statement(code: str) -> cst.SimpleStatementLine:
    statement = cst.parse_statement(code + "\n")
    assert isinstance(statement, cst.SimpleStatementLine)
    return statement


def calls_in(node: cst.CSTNode) -> Iterable[cst.Call]:
    return (n for n in walk_code(node) if isinstance(n, cst.Call))
