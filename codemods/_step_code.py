"""Where a module's per-step device code runs, and which slices in it move with the step
(TPU117 XLA hazards, TPU121 moving slices).

Step code is the body of a training loop (the innermost loop around a ``.backward()`` call, or
around a call of a function of this module that calls ``.backward()`` outside a loop), such step
functions themselves, ``forward`` methods of ``nn.Module`` classes, and every function of this
module they call (followed through plain calls and ``self.method()`` calls). Code under a
periodic guard (``if step % 100 == 0:``) runs every N steps and is not step code.
"""

from __future__ import annotations

import libcst as cst

from ._base import TpuCodemod, walk_all
from ._loops import ModuleIndex, names_in_target, walk_code
from ._tensors import TensorFacts


class StepCode:
    """The step loops and step functions of one module, found once."""

    def __init__(self, rule: TpuCodemod, index: ModuleIndex, facts: TensorFacts) -> None:
        self.rule = rule
        self.index = index
        self.facts = facts
        self._loops: set[int] = set()
        self._functions: set[int] = set()  # per-step code outside a loop (incl. forward)
        self._forwards: set[int] = set()
        self._find()

    def _find(self) -> None:
        index = self.index
        callee = {id(call): f for f in index.functions for call in index.calls_of(f)}
        step_functions: list[cst.FunctionDef] = []
        for call in index.calls:
            if not self._is_backward(call):
                continue
            loop = index.training_loop_of(call)
            if loop is not None:
                self._loops.add(id(loop))
            elif isinstance(index.owner(call), cst.FunctionDef):
                step_functions.append(index.owner(call))
        for function in step_functions:
            for call in index.calls_of(function):
                loop = index.training_loop_of(call)
                if loop is not None:
                    self._loops.add(id(loop))
        forwards = [
            f
            for f in index.functions
            if f.name.value == "forward"
            and (cls := index.enclosing_class(f)) is not None
            and self.facts.is_nn_module_class(cls)
        ]
        loop_bodies = [
            loop.body for loop in [*index.for_loops, *index.while_loops] if id(loop) in self._loops
        ]
        called_in_loops = [
            callee[id(n)]
            for body in loop_bodies
            for n in walk_code(body)
            if isinstance(n, cst.Call) and id(n) in callee
        ]
        self._forwards = _called_closure(forwards, callee)
        self._functions = _called_closure([*step_functions, *forwards, *called_in_loops], callee)

    def _is_backward(self, call: cst.Call) -> bool:
        func = call.func
        return (
            isinstance(func, cst.Attribute) and func.attr.value == "backward"
        ) or self.rule.is_name(func, "torch.autograd.backward")

    def region(self, node: cst.CSTNode) -> str | None:
        """Which step code ``node`` runs in: ``"forward"`` (forward and what it calls),
        ``"step"`` (the rest of the per-step code) or None, also under a periodic
        ``if step % N == 0:`` guard."""
        previous = node
        for ancestor in self.index.ancestors(node):
            if isinstance(ancestor, cst.If) and _is_periodic(ancestor.test):
                if previous is not ancestor.test:
                    return None
            if isinstance(ancestor, (cst.For, cst.While)) and id(ancestor) in self._loops:
                if previous is ancestor.body:
                    return "step"
            if isinstance(ancestor, cst.FunctionDef):
                if id(ancestor) in self._forwards:
                    return "forward"
                return "step" if id(ancestor) in self._functions else None
            if isinstance(ancestor, (cst.Lambda, cst.ClassDef)):
                return None
            previous = ancestor
        return None

    # ------------------------------------------------------------------ moving slices
    def moving_start(self, subscript: cst.Subscript) -> cst.BaseExpression | None:
        """The start of ``source[i:i + n]`` in step code when ``i`` advances with a loop: the
        loop's own variable, or a parameter that a loop passes its variable to
        (``get_batch(data, i)``). A slice moved right away (``x[i:j].to(device)``) is sliced
        where its source lives and is not one."""
        starts = [
            element.slice.lower
            for element in subscript.slice
            if isinstance(element.slice, cst.Slice) and element.slice.lower is not None
        ]
        if not starts or self.region(subscript) is None or self._moved_after(subscript):
            return None
        for start in starts:
            names = {n.value for n in walk_all(start) if isinstance(n, cst.Name)}
            if any(self._advances_with_a_loop(name, subscript) for name in names):
                return start
        return None

    def _moved_after(self, subscript: cst.Subscript) -> bool:
        parent = self.index.parent(subscript)
        return isinstance(parent, cst.Attribute) and parent.attr.value in {"to", "cpu"}

    def _advances_with_a_loop(self, name: str, node: cst.CSTNode) -> bool:
        index = self.index
        for loop in index.loops_around(node):
            if isinstance(loop, cst.For) and name in names_in_target(loop.target):
                return True
        function = index.owner(node)
        if not isinstance(function, cst.FunctionDef):
            return False
        params = [*function.params.posonly_params, *function.params.params]
        param = next((p for p in params if p.name.value == name), None)
        if param is None:
            return False
        for call in index.calls_of(function):
            passed = index.argument_of(call, function, param)
            if passed is None:
                continue
            for inner in walk_all(passed):
                if isinstance(inner, cst.Name) and any(
                    isinstance(loop, cst.For) and inner.value in names_in_target(loop.target)
                    for loop in index.loops_around(call)
                ):
                    return True
        return False


def _called_closure(roots, callee: dict[int, cst.FunctionDef]) -> set[int]:
    """``roots`` and every function of this module they call, transitively."""
    seen: set[int] = set()
    pending = list(roots)
    while pending:
        function = pending.pop()
        if id(function) in seen:
            continue
        seen.add(id(function))
        for node in walk_code(function.body):
            if isinstance(node, cst.Call) and id(node) in callee:
                pending.append(callee[id(node)])
    return seen


def _is_periodic(test: cst.BaseExpression) -> bool:
    return any(
        isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Modulo)
        for n in walk_all(test)
    )
