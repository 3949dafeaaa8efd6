"""How the rules walk a tree: libcst's own visit order, without libcst's cost of copying it.

libcst's ``CSTNode.visit`` rebuilds every node it enters, through the node's constructor and its
validation, even when the visitor changes nothing: over 71 torch files, a pass that changes
nothing took 2.5 s where reading the same nodes took 1.1 s. ``visit_without_copying`` calls
the same visitor methods in the same order, but a node none of whose children changed is kept
as it is. A node with a changed child is rebuilt by libcst itself (its
``_visit_and_replace_children``, fed the children's results), so removals, flattening and each
node type's own rules are libcst's.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import re
import typing
from collections import deque
from typing import Callable, Union

import libcst as cst
import libcst.matchers as m

from . import plain_libcst

VisitResult = Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel]

# On the paths that run for every node, node types are compared with ``type(node) is``, not
# isinstance: libcst's node classes use ABCMeta, so an isinstance that fails calls its Python
# ``__instancecheck__`` (0.27 µs a class), where ``type(node) is`` costs 0.04 µs. It is exact
# because libcst's concrete node classes are final (tests/engine/test_traversal.py checks it).


def visit_without_copying(
    node: cst.CSTNode,
    visitor: cst.CSTTransformer | cst.CSTVisitor,
    unentered: frozenset[type] = frozenset(),
) -> VisitResult:
    """``node.visit(visitor)``, except that unchanged nodes are the nodes given, not copies.

    ``unentered``: node types the visitor has nothing to do in (``types_leading_nowhere``). A
    child of one of those types is not visited at all, and stays as it is."""
    if plain_libcst():
        return node.visit(visitor)
    fields_hooked = _reacts_to_fields(type(visitor))
    if isinstance(visitor, cst.CSTVisitor):
        _read(node, visitor, fields_hooked, unentered)
        return node
    return _transform(node, visitor, fields_hooked, unentered)


def _read(
    node: cst.CSTNode, visitor: cst.CSTVisitor, fields_hooked: bool, unentered: frozenset[type]
) -> None:
    if visitor.on_visit(node):
        _visit_children(node, visitor, None, fields_hooked, unentered)
    visitor.on_leave(node)


def _transform(
    node: cst.CSTNode, visitor: cst.CSTTransformer, fields_hooked: bool, unentered: frozenset[type]
) -> VisitResult:
    if visitor.on_visit(node):
        results: list[tuple[cst.CSTNode, VisitResult]] = []
        updated = _visit_children(node, visitor, results, fields_hooked, unentered)
    else:
        updated = node
    result = visitor.on_leave(node, updated)
    if result is not updated and not isinstance(result, _RESULT_TYPES):
        raise cst.CSTValidationError(
            "Expected a node of type CSTNode or a RemovalSentinel, "
            + f"but got a return value of {type(result).__name__}"
        )
    return result


_RESULT_TYPES = (cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel)


def _visit_children(
    node: cst.CSTNode,
    visitor: cst.CSTTransformer | cst.CSTVisitor,
    results: list[tuple[cst.CSTNode, VisitResult]] | None,
    fields_hooked: bool,
    unentered: frozenset[type],
) -> cst.CSTNode:
    """Visits ``node``'s children: with ``results`` a list, the transformer's results are
    collected there and ``node`` with those results is returned; with None, it is read only.
    ``fields_hooked``: whether the visitor's ``on_visit_attribute`` and ``on_leave_attribute``
    can do anything (see ``_reacts_to_fields``); children of ``unentered`` types are passed
    over, unchanged."""
    fields = visited_fields(node)
    if fields is None:  # an order libcst's visits disagree on: let libcst walk this node
        return node._visit_and_replace_children(visitor)
    if fields_hooked:
        order = fields.order
    else:
        order = fields.walked.get(unentered)
        if order is None:
            order = fields.walked[unentered] = _fields_to_walk(type(node), fields, unentered)
    for name in order:
        value = getattr(node, name)
        if value is None and name in fields.skipped_when_none:
            continue
        if fields_hooked:
            visitor.on_visit_attribute(node, name)
        kind = _KINDS.get(type(value)) or _kind_of(value)
        if kind is not _OTHER:
            for child in (value,) if kind is _NODE else value:
                if type(child) in unentered:
                    continue  # unchanged: ``_Replay`` gives it back as it is
                if results is None:
                    _read(child, visitor, fields_hooked, unentered)
                else:
                    results.append((child, _transform(child, visitor, fields_hooked, unentered)))
        if fields_hooked:
            visitor.on_leave_attribute(node, name)
    if not results or all(child is result for child, result in results):
        return node
    replay = _Replay(results, unentered)
    rebuilt = node._visit_and_replace_children(replay)
    replay.check_all_used(node)
    return rebuilt


def _fields_to_walk(
    node_type: type, fields: VisitedFields, unentered: frozenset[type]
) -> tuple[str, ...]:
    """``fields.order`` without the fields whose annotation admits only ``unentered`` types
    (the whitespace around a call's parentheses, for a rule): nothing in them would be
    entered. Over the trees of the quarter of the torch sources that rules act on, reading
    them made a rule-like walk take 1.11 s instead of 0.80 s, a scope-like one 0.67 s
    instead of 0.53 s."""
    admits = _field_admits(node_type)
    return tuple(
        name
        for name in fields.order
        if name not in admits or not admits[name] <= unentered  # (unknown: walked)
    )


@functools.cache
def _reacts_to_fields(visitor_type: type) -> bool:
    """Whether entering or leaving a node's field can do anything for ``visitor_type``: its
    ``on_visit_attribute`` or ``on_leave_attribute`` is not libcst's, which only call
    ``visit_<Node>_<field>``/``leave_<Node>_<field>`` by name, or it defines such a method
    (libcst's own no-op ones aside). No rule does, and calling the hooks on every field of every
    node cost a few percent of a pass."""
    for hook in ("on_visit_attribute", "on_leave_attribute"):
        if getattr(visitor_type, hook) not in _LIBCSTS_FIELD_HOOKS:
            return True
    for name in _names_not_only_libcsts(visitor_type):  # (libcst's are libcst's)
        if _FIELD_HANDLER.match(name):
            function = getattr(visitor_type, name)
            if not getattr(function, "__module__", "libcst.").startswith("libcst."):
                return True
    return False


# libcst's hooks, which only call those methods (the matcher-decorated visitors' ones only
# check the methods' matchers first)
_LIBCSTS_FIELD_HOOKS = tuple(
    getattr(base, hook)
    for base in (
        cst.CSTVisitor,
        cst.CSTTransformer,
        m.MatcherDecoratableVisitor,
        m.MatcherDecoratableTransformer,
    )
    for hook in ("on_visit_attribute", "on_leave_attribute")
)
_FIELD_HANDLER = re.compile(r"(visit|leave)_[A-Z][A-Za-z]*_\w+\Z")


# What a field's value is, by its type: a node, a sequence of nodes (libcst's sequences hold
# nothing else), or anything else. Looked up by type: isinstance against libcst's abstract node
# class goes through ABCMeta each time, which was a tenth of a rule pass.
_NODE, _SEQUENCE, _OTHER = "node", "sequence", "other"
_KINDS: dict[type, str] = {}


def _kind_of(value: object) -> str:
    if isinstance(value, cst.CSTNode):
        kind = _NODE
    elif isinstance(value, (tuple, list)):
        kind = _SEQUENCE
    else:
        kind = _OTHER
    _KINDS[type(value)] = kind
    return kind


class _Replay(cst.CSTTransformer):
    """Hands libcst's rebuilding of one node the results its children already have, in the
    order libcst asks for them (a node may hold the same child object twice). A child of an
    ``unentered`` type was not walked, and has no result: it stays as it is."""

    def __init__(
        self, results: list[tuple[cst.CSTNode, VisitResult]], unentered: frozenset[type]
    ) -> None:
        super().__init__()
        self._pending = deque(results)
        self._unentered = unentered

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> VisitResult:
        if self._pending and self._pending[0][0] is original_node:
            return self._pending.popleft()[1]
        if type(original_node) in self._unentered:
            return original_node
        raise RuntimeError(
            f"{type(original_node).__name__} visited out of the order it was learnt in"
        )

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        pass

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass

    def check_all_used(self, parent: cst.CSTNode) -> None:
        if self._pending:
            raise RuntimeError(f"a child of {type(parent).__name__} was not revisited")


def children_of(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node.children``, read from the node's fields in the order libcst visits them.

    libcst's ``children`` rebuilds the node through a visitor to find them; reading the fields
    ``visited_fields`` names is many times cheaper."""
    return children_reader()(node)


def children_reader() -> Callable[[cst.CSTNode], list[cst.CSTNode]]:
    """``children_of`` for a walk over many nodes: whether the run is on stock libcst is read
    once, not for each node (reading the environment costs more than reading the fields)."""
    return _libcst_children if plain_libcst() else _children_from_fields


def _libcst_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    return list(node.children)


def _children_from_fields(node: cst.CSTNode) -> list[cst.CSTNode]:
    fields = visited_fields(node)
    if fields is None:
        return list(node.children)
    children: list[cst.CSTNode] = []
    for name in fields.order:
        value = getattr(node, name)
        kind = _KINDS.get(type(value)) or _kind_of(value)
        if kind is _NODE:
            children.append(value)
        elif kind is _SEQUENCE:
            children.extend(value)
    return children


@dataclasses.dataclass(frozen=True)
class VisitedFields:
    order: tuple[str, ...]  # the fields libcst's visit goes through, in order
    others: tuple[str, ...]  # the node's other fields that may hold nodes, by their types
    skipped_when_none: frozenset[str]  # fields of ``order`` not visited at all when None
    # unentered types -> the fields of ``order`` a walk that does not enter them goes through
    walked: dict[frozenset[type], tuple[str, ...]] = dataclasses.field(
        default_factory=dict, compare=False
    )


def visited_fields(node: cst.CSTNode) -> VisitedFields | None:
    """The fields libcst's visit of ``node`` goes through; None if not known.

    They are learnt from that same visit once per node type. A few fields are visited only when
    set (an f-string's ``format_spec``): a node holding one teaches the longer order, or, if two
    nodes disagree, gets None."""
    known = _FIELD_ORDER.get(type(node)) or _learn_field_order(node)
    if (
        known is not None
        and known.others
        and any(_holds_nodes(getattr(node, f)) for f in known.others)
    ):
        known = _learn_field_order(node)
    return known


def _learn_field_order(node: cst.CSTNode) -> VisitedFields | None:
    order = _fields_visited(node)
    previous = _FIELD_ORDER.get(type(node))
    if previous is not None and not set(previous.order) <= set(order):
        return None
    others = tuple(
        f.name for f in dataclasses.fields(node) if f.name not in order and _may_hold_nodes(f.type)
    )
    skipped = {
        name
        for name in order
        if name in _optional_fields(type(node)) and _skipped_when_none(node, name)
    }
    if previous is not None:
        skipped |= previous.skipped_when_none
    known = VisitedFields(order, others, frozenset(skipped))
    _FIELD_ORDER[type(node)] = known
    return known


def _fields_visited(node: cst.CSTNode) -> tuple[str, ...]:
    recorder = _FieldOrderRecorder()
    node._visit_and_replace_children(recorder)
    return tuple(dict.fromkeys(recorder.fields))


def _skipped_when_none(node: cst.CSTNode, name: str) -> bool:
    """Whether libcst's visit of ``node`` with ``name`` None would not go through ``name``."""
    if getattr(node, name) is None:
        return False  # it was just visited as None
    probe = copy.copy(node)
    object.__setattr__(probe, name, None)  # (a probe, never kept)
    try:
        return name not in _fields_visited(probe)
    except Exception:  # a node that cannot be without it
        return False


def _may_hold_nodes(annotation: object) -> bool:
    """False for a field type that certainly holds no node (a string, a flag, a literal)."""
    if isinstance(annotation, type):
        return is_node_class(annotation) or annotation in (tuple, list, object)
    if typing.get_origin(annotation) is typing.Literal:
        return False
    arguments = typing.get_args(annotation)
    if not arguments:
        return annotation is not None  # a name not resolved, Any: it may
    return any(_may_hold_nodes(argument) for argument in arguments)


def _holds_nodes(value: object) -> bool:
    return isinstance(value, cst.CSTNode) or (
        isinstance(value, (tuple, list)) and any(isinstance(v, cst.CSTNode) for v in value)
    )


_FIELD_ORDER: dict[type, VisitedFields] = {}


@functools.cache
def _optional_fields(node_type: type) -> frozenset[str]:
    """The fields of ``node_type`` that are None unless set."""
    return frozenset(f.name for f in dataclasses.fields(node_type) if f.default is None)


class _FieldOrderRecorder(cst.CSTVisitor):
    """The names of the fields a node's visit goes through, in order (children not entered)."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.fields.append(attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass


def types_leading_nowhere(wanted: frozenset[type]) -> frozenset[type]:
    """The node types that are not ``wanted`` and can hold no ``wanted`` node at any depth: a
    walk that acts only on ``wanted`` nodes need not enter them (``visit_without_copying``).

    Most of a tree is such nodes for any rule: whitespace, commas, dots and brackets were 70% of
    the nodes of torch/nn/functional.py, and a rule that only acts on calls has nothing to do in
    a name's parentheses either."""
    below = _types_below()
    return frozenset(t for t in below if t not in wanted and below[t].isdisjoint(wanted))


@functools.cache
def _types_below() -> dict[type, frozenset[type]]:
    """Each concrete libcst node type -> the concrete node types that can be under a node of
    that type, at any depth: what its fields' annotations admit, closed over (libcst's
    validation and parser keep to them; tests/engine/test_traversal.py checks real trees)."""
    direct = {
        node_type: frozenset().union(*_field_admits(node_type).values())
        for node_type in _concrete_node_types()
    }
    below = {node_type: set(held) for node_type, held in direct.items()}
    grew = True
    while grew:
        grew = False
        for reachable in below.values():
            more = set().union(*(below[t] for t in reachable)) - reachable
            if more:
                reachable |= more
                grew = True
    return {node_type: frozenset(reachable) for node_type, reachable in below.items()}


@functools.cache
def _field_admits(node_type: type) -> dict[str, frozenset[type]]:
    """Each field of ``node_type`` -> the concrete node types its annotation admits."""
    concrete = _concrete_types_of()
    return {
        name: frozenset().union(*(concrete.get(held, ()) for held in _node_classes_in(annotation)))
        for name, annotation in typing.get_type_hints(node_type).items()
    }


@functools.cache
def _concrete_types_of() -> dict[type, frozenset[type]]:
    """Each node class, abstract ones too -> the concrete node types that are it or derive from
    it: ``issubclass`` read off their MROs once (libcst registers no virtual subclasses;
    tests/engine/test_traversal.py checks it). Asking ``issubclass`` of every concrete type for
    each field's classes went through ABCMeta 100,000 times, most of a rule's first walk."""
    found: dict[type, set[type]] = {}
    for node_type in _concrete_node_types():
        for base in node_type.__mro__:
            found.setdefault(base, set()).add(node_type)
    return {base: frozenset(types) for base, types in found.items()}


@functools.cache
def _concrete_node_types() -> tuple[type, ...]:
    return tuple(
        c
        for c in vars(cst).values()
        if isinstance(c, type) and is_node_class(c) and not inspect.isabstract(c)
    )


def is_node_class(cls: type) -> bool:
    """``issubclass(cls, cst.CSTNode)``, read off the MRO (libcst registers no virtual
    subclasses): for a class that is no node, ``issubclass`` goes through ABCMeta's search of
    every subclass of CSTNode, and working out the tables above asked it of about a hundred
    such classes (40 ms, a tenth of a small project's run)."""
    return cst.CSTNode in cls.__mro__


def _node_classes_in(annotation: object) -> list[type]:
    """The node classes (abstract ones too) a field annotated ``annotation`` can hold; any node
    for an annotation not understood (``Any``, a name not resolved)."""
    if annotation in (typing.Any, object):
        return [cst.CSTNode]
    if isinstance(annotation, type):
        return [annotation] if is_node_class(annotation) else []
    if typing.get_origin(annotation) is typing.Literal:
        return []
    arguments = typing.get_args(annotation)
    if not arguments:
        return [cst.CSTNode]
    return [c for argument in arguments for c in _node_classes_in(argument)]


# Whitespace, comments and line breaks: what only lays code out (they hold nothing else).
LAYOUT = frozenset(
    {
        cst.SimpleWhitespace,
        cst.ParenthesizedWhitespace,
        cst.TrailingWhitespace,
        cst.EmptyLine,
        cst.Comment,
        cst.Newline,
    }
)


def handled_node_types(visitor_type: type) -> frozenset[type]:
    """The node types ``visitor_type`` has a visit or leave method for, the no-op defaults of
    libcst's base visitors aside (a field's, ``visit_Call_func``, counts for its node type)."""
    handled = set()
    for name in _names_not_only_libcsts(visitor_type):
        prefix, _, rest = name.partition("_")
        if prefix not in ("visit", "leave") or not rest:
            continue
        node_type = getattr(cst, rest.split("_")[0], None)
        if not (isinstance(node_type, type) and is_node_class(node_type)):
            continue
        if own_method(visitor_type, name) is not None:
            handled.add(node_type)
    return frozenset(handled)


def own_method(visitor_type: type, name: str):
    """``visitor_type``'s method ``name`` (``visit_Call``), or None when it has none or only the
    no-op default libcst's base visitors define for every node type."""
    function = getattr(visitor_type, name, None)
    if function is None or any(function is getattr(base, name, None) for base in _LIBCSTS_VISITORS):
        return None
    return function


_LIBCSTS_VISITORS = (cst.CSTVisitor, cst.CSTTransformer)
_LIBCSTS_VISITOR_CLASSES = frozenset(c for visitor in _LIBCSTS_VISITORS for c in visitor.__mro__)


def _names_not_only_libcsts(visitor_type: type) -> set[str]:
    """What ``dir(visitor_type)`` names, but the names only libcst's base visitors define: their
    no-op ``visit_``/``leave_`` methods for every node type, of which ``own_method`` gives None
    (looked up on the class, such a name finds the method of one of them that ``CSTVisitor`` or
    ``CSTTransformer`` finds). Looking at each of those 1,600 names was most of a rule's set-up."""
    return {
        name
        for klass in visitor_type.__mro__
        if klass not in _LIBCSTS_VISITOR_CLASSES
        for name in vars(klass)
    }
