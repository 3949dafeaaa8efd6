"""Objects of a class of this file that keep what a training step hands them and show it as text:
the ``AverageMeter`` of pytorch/examples' imagenet script and of the many repositories that copied
it (TPU115, finding TPU243).

``top1.update(acc1[0], n)`` stores a device tensor in ``self.val`` and, through arithmetic, in
``self.sum`` and ``self.avg``. Nothing is read in the step, but each time the meter is formatted
(``str(meter)``, ``fmtstr.format(**self.__dict__)``) every one of those attributes it shows is a
device->host copy of its own. This module answers which attributes a call fills from which
argument and which of them the class formats; it follows one class of this file, its methods'
plain ``self.x = ...`` / ``self.x += ...`` statements, and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import libcst as cst

from ._loops import ModuleIndex, names_in_target, walk_code

# Formatting the whole object: every attribute it keeps may be shown.
WHOLE_OBJECT = ("__dict__",)
FORMAT_METHODS = frozenset({"format", "format_map"})
# Wrapping a value in one of these makes it a host value before it is kept.
HOST_CONVERSIONS = frozenset({"float", "int", "bool", "str"})
# What a step computes from its batch with these is a host value (a size, a count, a copy).
HOST_FUNCTIONS = HOST_CONVERSIONS | {"len", "round", "repr", "isinstance", "type"}
HOST_METHODS = frozenset({"item", "tolist", "numpy", "size", "dim", "numel", "nelement", "cpu"})
HOST_ATTRIBUTES = frozenset({"shape", "device", "dtype", "ndim", "is_cuda"})


@dataclass(frozen=True)
class KeptValue:
    """``meter.method(value, ...)`` keeps ``value`` in ``attributes``, which the class formats."""

    meter: str  # "top1"
    cls: str  # "AverageMeter"
    value: cst.BaseExpression  # acc1[0]
    attributes: tuple[str, ...]  # ("val", "avg"): kept from value and shown as text


def kept_values(
    index: ModuleIndex,
    call: cst.Call,
    is_device_value: Callable[[cst.BaseExpression], bool],
) -> list[KeptValue]:
    """What ``call`` hands to an object of this file's classes that keeps it and formats it."""
    if not (isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name)):
        return []
    cls = _class_of(index, call.func.value)
    method = _method(cls, call.func.attr.value) if cls is not None else None
    if cls is None or method is None:
        return []
    shown = _shown_attributes(cls)
    found = []
    for param, value in _bound_arguments(method, call):
        if not is_device_value(value):
            continue
        kept = _attributes_filled_from(method, param)
        attributes = tuple(a for a in kept if shown is None or a in shown)
        if attributes:
            found.append(KeptValue(call.func.value.value, cls.name.value, value, attributes))
    return found


def step_values(loop: cst.For | cst.While, tensors: set[str]) -> set[str]:
    """Names that hold device values in the step: the batch the loop iterates (not an
    ``enumerate`` index, not a ``range`` counter), the known ``tensors``, and what the body
    computes from them other than through a host conversion (``acc1 = accuracy(output, y)``,
    not ``n = images.size(0)``)."""
    found = set(tensors)
    if isinstance(loop, cst.For):
        found |= _batch_names(loop)
    assignments = []
    for node in walk_code(loop.body):
        if isinstance(node, cst.Assign):
            targets = [n for t in node.targets for n in names_in_target(t.target)]
            assignments.append((targets, node.value))
        elif isinstance(node, cst.AugAssign):
            assignments.append((names_in_target(node.target), node.value))
    changed = True
    while changed:  # a value may come from one assigned later in the body, on the next pass
        changed = False
        for targets, value in assignments:
            if not found.issuperset(targets) and from_device(value, found):
                found |= set(targets)
                changed = True
    return found


def _batch_names(loop: cst.For) -> set[str]:
    iterable, target = loop.iter, loop.target
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name):
        if iterable.func.value == "range":
            return set()
        if iterable.func.value == "enumerate" and isinstance(target, (cst.Tuple, cst.List)):
            return {n for e in target.elements[1:] for n in names_in_target(e.value)}
    return set(names_in_target(target))


def from_device(value: cst.CSTNode, device_names: set[str]) -> bool:
    """``value`` is computed from one of ``device_names`` and not made a host value."""
    if isinstance(value, cst.Name):
        return value.value in device_names
    if isinstance(value, cst.Attribute):
        return value.attr.value not in HOST_ATTRIBUTES and from_device(value.value, device_names)
    if isinstance(value, cst.Call):
        func = value.func
        if isinstance(func, cst.Name) and func.value in HOST_FUNCTIONS:
            return False
        if isinstance(func, cst.Attribute):
            if func.attr.value in HOST_METHODS:
                return False
            if from_device(func.value, device_names):
                return True
        return any(from_device(arg.value, device_names) for arg in value.args)
    if isinstance(value, (cst.Lambda, cst.BaseComp)):
        return False
    return any(from_device(child, device_names) for child in value.children)


def _class_of(index: ModuleIndex, name: cst.Name) -> cst.ClassDef | None:
    """The module-level class every binding of ``name`` constructs: ``top1 = AverageMeter(...)``."""
    values = index.binding_values(name)
    if not values:
        return None
    classes = {id(c): c for c in (_module_class(index, v) for v in values)}
    if len(classes) != 1 or None in classes.values():
        return None
    return next(iter(classes.values()))


def _module_class(index: ModuleIndex, value: cst.BaseExpression) -> cst.ClassDef | None:
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)):
        return None
    for statement in index.module.body:
        if isinstance(statement, cst.ClassDef) and statement.name.value == value.func.value:
            return statement if not statement.bases else _plain_class(statement)
    return None


def _plain_class(cls: cst.ClassDef) -> cst.ClassDef | None:
    """A class whose bases are ``object`` only: a subclass of anything else (an ``nn.Module``,
    another meter) may keep or show its values elsewhere."""
    plain = all(isinstance(b.value, cst.Name) and b.value.value == "object" for b in cls.bases)
    return cls if plain else None


def _method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    for statement in cls.body.body:
        if (
            isinstance(statement, cst.FunctionDef)
            and statement.name.value == name
            and not statement.decorators
        ):
            return statement
    return None


def _bound_arguments(
    method: cst.FunctionDef, call: cst.Call
) -> Iterator[tuple[str, cst.BaseExpression]]:
    """(parameter name, value passed) for the plain arguments of ``call``; ``self`` skipped."""
    params = [p.name.value for p in method.params.params[1:]]
    for position, arg in enumerate(call.args):
        if arg.star:
            return
        if arg.keyword is not None:
            if arg.keyword.value in params:
                yield arg.keyword.value, arg.value
        elif position < len(params):
            yield params[position], arg.value


def _attributes_filled_from(method: cst.FunctionDef, param: str) -> list[str]:
    """The ``self`` attributes whose value comes from ``param``, directly or through other
    attributes filled from it (``self.avg = self.sum / self.count``), in the order assigned."""
    kept: list[str] = []
    changed = True
    while changed:
        changed = False
        for target, value in _self_assignments(method):
            if target not in kept and _carries(value, param, kept):
                kept.append(target)
                changed = True
    return kept


def _self_assignments(method: cst.FunctionDef) -> Iterator[tuple[str, cst.BaseExpression]]:
    for node in walk_code(method.body):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if _self_attribute(target.target):
                    yield target.target.attr.value, node.value
        elif isinstance(node, cst.AugAssign) and _self_attribute(node.target):
            yield node.target.attr.value, node.value


def _self_attribute(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    )


def _carries(value: cst.CSTNode, param: str, kept: list[str]) -> bool:
    """``value`` mentions ``param`` or a kept attribute outside a host conversion."""
    if isinstance(value, cst.Call) and (
        (isinstance(value.func, cst.Name) and value.func.value in HOST_CONVERSIONS)
        or (isinstance(value.func, cst.Attribute) and value.func.attr.value in ("item", "tolist"))
    ):
        return False
    if isinstance(value, cst.Name):
        return value.value == param
    if _self_attribute(value):
        return value.attr.value in kept
    if isinstance(value, cst.Attribute):
        return _carries(value.value, param, kept)
    if isinstance(value, cst.Arg):
        return _carries(value.value, param, kept)
    return any(_carries(child, param, kept) for child in value.children)


def _shown_attributes(cls: cst.ClassDef) -> set[str] | None:
    """The attributes the class formats as text; None when it formats the whole object
    (``.format(**self.__dict__)``, ``vars(self)``), so any of them may be shown."""
    shown: set[str] = set()
    nodes = (
        node
        for method in cls.body.body
        if isinstance(method, cst.FunctionDef)
        for node in walk_code(method.body)
    )
    for node in nodes:
        if isinstance(node, cst.Call) and _formats(node):
            for arg in node.args:
                if _is_whole_object(arg.value):
                    return None
                shown |= _attributes_in(arg.value)
        elif isinstance(node, cst.FormattedStringExpression):
            shown |= _attributes_in(node.expression)
        elif (
            isinstance(node, cst.BinaryOperation)
            and isinstance(node.operator, cst.Modulo)
            and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString))
        ):
            if _is_whole_object(node.right):
                return None
            shown |= _attributes_in(node.right)
    return shown


def _formats(call: cst.Call) -> bool:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value in FORMAT_METHODS
    return isinstance(func, cst.Name) and func.value in ("format", "str", "repr", "print")


def _is_whole_object(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Attribute) and node.attr.value in WHOLE_OBJECT:
        return isinstance(node.value, cst.Name) and node.value.value == "self"
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value == "vars"
        and len(node.args) == 1
        and isinstance(node.args[0].value, cst.Name)
        and node.args[0].value.value == "self"
    )


def _attributes_in(node: cst.CSTNode) -> set[str]:
    return {n.attr.value for n in walk_code(node) if _self_attribute(n)}
