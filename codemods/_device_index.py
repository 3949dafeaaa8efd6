"""Which expressions hold a CUDA device index: the ``0`` of ``model.to(0)``, a rank, a GPU id.

``x.to(0)``, ``x.to(rank)`` and ``torch.zeros(3, device=local_rank)`` move to a CUDA device by
its number, a spelling the DDP tutorials teach (``self.gpu_id = int(os.environ["LOCAL_RANK"])``
then ``model.to(self.gpu_id)``). On a TPU host that number still means CUDA and the move fails.
An expression counts as an index only when every value it can hold is one: an integer literal,
``int(...)``, a rank or ordinal call, a parameter annotated ``int``, the first parameter of a
function handed to a process launcher (the process index), or a parameter every caller in the
file passes an index to. Anything it cannot follow is not an index, so a move the rule cannot
read is left as it is.
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst
from libcst.metadata import ParentNodeProvider, ScopeProvider

from ._base import dotted_name, walk_all

# Calls that return a process's rank or device ordinal.
INDEX_CALLS = frozenset(
    {
        "builtins.int",
        "torch.cuda.current_device",
        "torch.distributed.get_rank",
        "torch.distributed.get_node_local_rank",
        "torch_xla.runtime.local_ordinal",
        "torch_xla.runtime.global_ordinal",
    }
)
# Launchers that call the function they are given with the process index first.
LAUNCHERS = frozenset(
    {
        "torch.multiprocessing.spawn",
        "torch.multiprocessing.start_processes",
        "torch_xla.launch",
        "torch_xla.distributed.xla_multiprocessing.spawn",
    }
)
# How many names deep a value is followed (``device = gpu`` where ``gpu = rank``...).
DEPTH = 4


def is_device_index(rule, node: cst.CSTNode, depth: int = DEPTH) -> bool:
    """``node`` (of the tree ``rule`` is walking) always holds an integer device index."""
    if depth <= 0:
        return False
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.Call):
        return rule.is_name(node.func, *INDEX_CALLS)
    if isinstance(node, cst.Name):
        scope = rule.get_metadata(ScopeProvider, node, None)
        return scope is not None and holds_only_indices(rule, scope, node.value, depth - 1)
    if isinstance(node, cst.Attribute) and dotted_name(node.value) == "self":
        values = list(_self_attribute_values(rule, node))
        return bool(values) and all(
            v is not None and is_device_index(rule, v, depth - 1) for v in values
        )
    return False


def holds_only_indices(rule, scope, name: str, depth: int = DEPTH) -> bool:
    """Every binding of ``name`` seen from ``scope`` is a device index (and there is one)."""
    bindings = list(scope[name]) if name in scope else []
    return bool(bindings) and all(_binds_an_index(rule, b, depth) for b in bindings)


def _binds_an_index(rule, assignment, depth: int) -> bool:
    bound = getattr(assignment, "node", None)
    if isinstance(bound, cst.Param):
        return _param_is_an_index(rule, bound, depth)
    value = rule.assigned_value(assignment)  # None: an import, a loop variable...
    return value is not None and is_device_index(rule, value, depth)


def _param_is_an_index(rule, param: cst.Param, depth: int) -> bool:
    annotation = param.annotation
    if annotation is not None:
        return dotted_name(annotation.annotation) == "int"
    function = _parent(rule, _parent(rule, param))
    if not isinstance(function, cst.FunctionDef):
        return False
    position = _position(function, param)
    if position is None:
        return False
    if position == 0 and any(_launches(rule, call, function) for call in _calls(rule, function)):
        return True
    passed = [_passed(call, position, param.name.value) for call in _direct_calls(rule, function)]
    return bool(passed) and all(
        value is not None and is_device_index(rule, value, depth) for value in passed
    )


def _position(function: cst.FunctionDef, param: cst.Param) -> Optional[int]:
    positional = [*function.params.posonly_params, *function.params.params]
    return next((i for i, p in enumerate(positional) if p is param), None)


def _calls(rule, function: cst.FunctionDef) -> list[cst.Call]:
    """Every call in the tree of ``function``, found once per tree and rule pass."""
    root = _root(rule, function)
    found = rule.__dict__.setdefault("_calls_by_tree", {})
    if id(root) not in found:
        found[id(root)] = (root, [node for node in walk_all(root) if isinstance(node, cst.Call)])
    return found[id(root)][1]


def _launches(rule, call: cst.Call, function: cst.FunctionDef) -> bool:
    """``call`` is ``mp.spawn(function, ...)`` (or another launcher of ``LAUNCHERS``)."""
    first = call.args[0].value if call.args and call.args[0].keyword is None else None
    return (
        isinstance(first, cst.Name)
        and first.value == function.name.value
        and rule.is_name(call.func, *LAUNCHERS)
    )


def _direct_calls(rule, function: cst.FunctionDef) -> list[cst.Call]:
    """The calls of a module-level function by its name (a method's callers are not followed)."""
    if not isinstance(_parent(rule, function), cst.Module):
        return []
    name = function.name.value
    return [
        call
        for call in _calls(rule, function)
        if isinstance(call.func, cst.Name) and call.func.value == name
    ]


def _passed(call: cst.Call, position: int, name: str) -> Optional[cst.BaseExpression]:
    """What ``call`` passes to the parameter at ``position`` called ``name``."""
    positional = [arg for arg in call.args if arg.keyword is None]
    if any(arg.star for arg in call.args):
        return None
    if position < len(positional):
        return positional[position].value
    return next((arg.value for arg in call.args if arg.keyword and arg.keyword.value == name), None)


def _self_attribute_values(
    rule, attribute: cst.Attribute
) -> Iterator[Optional[cst.BaseExpression]]:
    """The values assigned to ``self.<attr>`` in the methods of the class around ``attribute``
    (None for a change in place or an annotation without a value: not known)."""
    cls = _enclosing_class(rule, attribute)
    if cls is None:
        return
    wanted = f"self.{attribute.attr.value}"
    for node in walk_all(cls.body):
        if isinstance(node, cst.Assign) and any(
            dotted_name(target.target) == wanted for target in node.targets
        ):
            yield node.value
        elif (
            isinstance(node, (cst.AnnAssign, cst.AugAssign)) and dotted_name(node.target) == wanted
        ):
            yield node.value if isinstance(node, cst.AnnAssign) else None


def _enclosing_class(rule, node: cst.CSTNode) -> Optional[cst.ClassDef]:
    current = _parent(rule, node)
    while current is not None and not isinstance(current, cst.ClassDef):
        current = _parent(rule, current)
    return current


def _root(rule, node: cst.CSTNode) -> cst.CSTNode:
    while (parent := _parent(rule, node)) is not None:
        node = parent
    return node


def _parent(rule, node: Optional[cst.CSTNode]) -> Optional[cst.CSTNode]:
    if node is None:
        return None
    return rule.get_metadata(ParentNodeProvider, node, None)
