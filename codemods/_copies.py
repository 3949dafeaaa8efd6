"""What the rules that delete host->device copies share (TPU122 the per-batch ``.to(device)``,
TPU123 ``.pin_memory()``): once a copy is gone, what held it may collapse.

``[t.to(device) for t in batch]`` without its move is ``list(batch)``, ``v.pin_memory() if
pinned else v`` is ``v``, and ``x = x.to(device)`` is ``x = x``, which goes. A rule marks each
copy it deletes with ``mark_enclosing`` (while planning, or when it leaves the call) and this
mixin collapses what holds it.
"""

from __future__ import annotations

import libcst as cst

from ._base import code_of
from ._loops import names_in_target
from ._statements import AppliesStatementEdits

COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
# Builtins that turn an identity generator back into a container: ``tuple(t for t in b)``.
CONTAINER_BUILTINS = frozenset({"builtins.tuple", "builtins.list"})


class CollapsesRemovedCopies(AppliesStatementEdits):
    """Mixin (before ``TpuCodemod`` in a rule's bases; the rule sets ``self.index``, a
    ``ModuleIndex``): collapses comprehensions, conditionals and assignments that held a copy
    the rule removed."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self.collapsible: set[int] = set()  # comprehensions/conditionals that held a copy
        self.candidates: set[int] = set()  # assignments that held a copy
        self.dropped: set[int] = set()  # assignments that became ``x = x``

    def mark_enclosing(self, call: cst.Call) -> None:
        """Remember what may collapse once ``call`` is gone: comprehensions and conditionals that
        become copies, and the statement that may become ``x = x``."""
        for ancestor in self.index.ancestors(call):
            if isinstance(ancestor, (*COMPREHENSIONS, cst.IfExp)):
                self.collapsible.add(id(ancestor))
            elif isinstance(ancestor, (cst.Assign, cst.Expr)):
                self.candidates.add(id(ancestor))
            elif isinstance(ancestor, cst.BaseStatement):
                break

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        # ``v.to(device) if torch.is_tensor(v) else v`` lost its move: both branches agree.
        if id(original_node) in self.collapsible and code_of(updated_node.body) == code_of(
            updated_node.orelse
        ):
            return updated_node.body
        return updated_node

    def leave_DictComp(
        self, original_node: cst.DictComp, updated_node: cst.DictComp
    ) -> cst.BaseExpression:
        source = _identity_dict_source(updated_node)
        if id(original_node) in self.collapsible and source is not None:
            return cst.Call(func=cst.Name("dict"), args=[cst.Arg(source)])
        return updated_node

    def leave_ListComp(
        self, original_node: cst.ListComp, updated_node: cst.ListComp
    ) -> cst.BaseExpression:
        source = _identity_source(updated_node)
        if id(original_node) in self.collapsible and source is not None:
            return cst.Call(func=cst.Name("list"), args=[cst.Arg(source)])
        return updated_node

    def collapse_container_call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """``tuple(t for t in batch)`` (its move removed) -> ``tuple(batch)``."""
        if not (
            len(original.args) == 1
            and isinstance(original.args[0].value, cst.GeneratorExp)
            and id(original.args[0].value) in self.collapsible
            and self.is_name(original.func, *CONTAINER_BUILTINS)
        ):
            return updated
        generator = updated.args[0].value
        source = _identity_source(generator) if isinstance(generator, cst.GeneratorExp) else None
        if source is None:
            return updated
        return updated.with_changes(args=[updated.args[0].with_changes(value=source)])

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        if id(original_node) in self.candidates and _is_self_assignment(
            updated_node, isinstance(original_node.value, cst.DictComp)
        ):
            self.dropped.add(id(original_node))
        return updated_node

    def leave_Expr(self, original_node: cst.Expr, updated_node: cst.Expr) -> cst.Expr:
        # ``batch.to(device)`` as a statement did nothing; without the move it is a bare name.
        if id(original_node) in self.candidates and isinstance(updated_node.value, cst.Name):
            self.dropped.add(id(original_node))
        return updated_node

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        return self.edits.remove_small_statements(original_node, updated_node, self.dropped)


def _single_for(comp) -> cst.CompFor | None:
    comp_for = comp.for_in
    if comp_for.inner_for_in is not None or comp_for.ifs or comp_for.asynchronous is not None:
        return None
    return comp_for


def _identity_source(comp: cst.ListComp | cst.GeneratorExp) -> cst.BaseExpression | None:
    """``X`` for ``[t for t in X]`` / ``(t for t in X)``."""
    comp_for = _single_for(comp)
    if comp_for is None or not isinstance(comp_for.target, cst.Name):
        return None
    if isinstance(comp.elt, cst.Name) and comp.elt.value == comp_for.target.value:
        return comp_for.iter
    return None


def _identity_dict_source(comp: cst.DictComp) -> cst.BaseExpression | None:
    """``X`` for ``{k: v for k, v in X.items()}``."""
    comp_for = _single_for(comp)
    if comp_for is None or names_in_target(comp_for.target) != [
        code_of(comp.key),
        code_of(comp.value),
    ]:
        return None
    items = comp_for.iter
    if (
        isinstance(items, cst.Call)
        and not items.args
        and isinstance(items.func, cst.Attribute)
        and items.func.attr.value == "items"
    ):
        return items.func.value
    return None


def _is_self_assignment(assign: cst.Assign, from_dict_comp: bool) -> bool:
    """``x = x``, ``a, b = a, b``, or ``batch = dict(batch)`` made from a copying comprehension."""
    if len(assign.targets) != 1:
        return False
    target, value = assign.targets[0].target, assign.value
    if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)):
        return len(target.elements) == len(value.elements) and all(
            code_of(left.value) == code_of(right.value)
            for left, right in zip(target.elements, value.elements)
        )
    if code_of(target) == code_of(value):
        return True
    return (
        from_dict_comp
        and isinstance(value, cst.Call)
        and code_of(value.func) == "dict"
        and len(value.args) == 1
        and code_of(value.args[0].value) == code_of(target)
    )
