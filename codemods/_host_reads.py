"""Where a training step reads device values, and what could move out of it: the planning that
TPU115 (step closures, sums kept on the device, the sync moved after them) and TPU124 (progress
bars throttled) share, and the training loops TPU125 looks into.

``PlansHostReads.visit_Module`` finds the training loops whose step ends at a known boundary and
walks each one's reads in order (``_plan_loop``), calling a hook for each decision: a read held on
the device (``_hold``), a running sum (``_rewrite_accumulation``), a report that moves into a step
closure (``_move_into_closure``), a read to flag (``_flag_read``)... The hooks do nothing here: each
rule acts on the decisions of its own idea. Each rule plans on its own input; TPU124 runs before
TPU115, so that the bars it puts under an interval condition are, for TPU115, reports at an
interval like any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import libcst as cst

from ._base import statement_call, walk_all
from ._loops import (
    AUTOGRAD_FUNCTIONS,
    XLA_OPTIMIZER_STEP,
    ModuleIndex,
    calls,
    named_like_optimizer,
    names_in_target,
    refers_to,
    walk_code,
)
from ._statements import AppliesStatementEdits

SYNCS = ("torch_xla.sync", "torch_xla.torch_xla.sync", "torch_xla.core.xla_model.mark_step")
SYNC_SPELLINGS = ("torch_xla.sync", "xm.mark_step")
# Methods that only report a value: their call can run later, in a step closure, unchanged.
REPORTING_METHODS = frozenset(
    {
        "info", "debug", "warning", "warn", "error", "critical", "log", "write",
        "add_scalar", "add_scalars", "log_metric", "log_metrics",
        "set_postfix", "set_postfix_str", "set_description", "set_description_str",
    }
)  # fmt: skip
PROGRESS_BAR_METHODS = frozenset(
    {"set_postfix", "set_postfix_str", "set_description", "set_description_str"}
)
# ``X.item()`` where X has one of these calls or a comparison counts things: an integer.
COUNTING_CALLS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "count_nonzero"})
FLOATING_CALLS = frozenset({"float", "double", "half", "bfloat16", "mean", "to"})
LOG_EVERY = "LOG_EVERY"


@dataclass
class Accumulator:
    """A local ``v`` summed from host reads: ``v += loss.item()``."""

    name: str
    integral: bool  # every term counts things and the first value is an int literal
    statements: list[cst.SimpleStatementLine] = field(default_factory=list)

    def read(self) -> cst.Call:
        """Its value on the host: ``float(v)``, or ``int(v)`` for a count."""
        converter = "int" if self.integral else "float"
        return cst.Call(cst.Name(converter), [cst.Arg(cst.Name(self.name))])


@dataclass
class LoopPlan:
    """What happens to the reads of one training loop."""

    loop: cst.For | cst.While
    sync: cst.SimpleStatementLine | None  # None: the loop iterates an MpDeviceLoader
    sync_movable: bool = False


class PlansHostReads(AppliesStatementEdits):
    """Mixin (before ``TpuCodemod`` in a rule's bases): plans the reads of every training loop
    and calls the rule's hooks; see the module's docstring."""

    # Whether a progress bar that is not under an interval condition may still be throttled:
    # True for TPU124, which does that; for the other rules such a bar reads every step.
    THROTTLES_PROGRESS_BARS = False

    def __init__(self, context) -> None:
        super().__init__(context)
        self.call_edits: dict[int, cst.BaseExpression] = {}  # id(original Call) -> new expr
        self.name_edits: dict[int, cst.BaseExpression] = {}  # id(original Name) -> new expr

    # ================================================================== planning
    def visit_Module(self, node: cst.Module) -> bool:
        self.index = ModuleIndex(self, node)
        loops = self._training_loops()
        self.training_loop_ids = {id(loop) for loop in loops}
        for loop in loops:
            self._flag_kept_device_values(loop)
            plan = self._boundary(loop)
            if plan is not None and isinstance(loop.body, cst.IndentedBlock):
                self._plan_loop(plan)
        self._planned(node)
        return True

    # ------------------------------------------------------------------ hooks (no-ops here)
    def _planned(self, module: cst.Module) -> None:
        """Every loop is planned."""

    def _flag_kept_device_values(self, loop) -> None:
        """The step of ``loop`` may hand device values to objects that keep them (TPU125)."""

    def _hold(self, reads) -> None:
        """``v = X.item()`` mid-step can hold ``X`` on the device for the reports after it."""

    def _read_held_values(self, statement, held: dict[str, Accumulator]) -> None:
        """A report after a sync that stays put reads the held values where it stands."""

    def _rewrite_accumulation(self, reads) -> None:
        """``v += X.item()`` can sum on the device."""

    def _convert_uses_outside(self, loop, function, accumulator: Accumulator) -> None:
        """The uses of a sum kept on the device read it once."""

    def _report_after_fixed_sync(self, statement, reads) -> None:
        """A report or read after a sync that must stay where it is."""

    def _flag_report_of_many(self, loop, statement, reads, accumulators) -> str | None:
        """A per-step report of several device values; returns its marker, if reported."""
        return None

    def _move_into_closure(self, plan: LoopPlan, statement, accumulators, marker=None) -> None:
        """A report that can run in a step closure."""

    def _flag_read(self, node: cst.CSTNode, what: str) -> None:
        """A read that stays in the step."""

    def _move_sync(self, plan: LoopPlan) -> None:
        """A rewritten read follows the sync, which can move to the end of the loop body."""

    # ------------------------------------------------------------------ training loops
    def _training_loops(self) -> list[cst.For | cst.While]:
        markers = [call for call in self.index.calls if self._is_step_marker(call)]
        step_functions = {
            id(self.index.owner(call))
            for call in markers
            if self.index.training_loop_of(call) is None
            and isinstance(self.index.owner(call), cst.FunctionDef)
        }
        for function in self.index.functions:
            if id(function) in step_functions:
                markers += self.index.calls_of(function)
        loops: dict[int, cst.For | cst.While] = {}
        for marker in markers:
            loop = self.index.training_loop_of(marker)
            if loop is not None:
                loops.setdefault(id(loop), loop)
        return sorted(loops.values(), key=self.position)

    def _is_step_marker(self, call: cst.Call) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "backward":
            return True
        if refers_to(self, func, AUTOGRAD_FUNCTIONS) or calls(self, call, XLA_OPTIMIZER_STEP):
            return True
        if not (isinstance(func, cst.Attribute) and func.attr.value == "step"):
            return False
        return named_like_optimizer(func.value)

    def _boundary(self, loop: cst.For | cst.While) -> LoopPlan | None:
        """Where the loop's step ends, or None when the loop has no boundary this rule knows."""
        if self.index.frameworks.owns_code(loop.body):
            return None  # a framework's loop: it decides when the step ends
        if self._iterates_device_loader(loop):
            return LoopPlan(loop, sync=None)
        if not isinstance(loop.body, cst.IndentedBlock):
            return None
        for statement in loop.body.body:
            if self._is_sync_statement(statement):
                return LoopPlan(loop, statement, self._movable(loop, statement))
        return None

    def _iterates_device_loader(self, loop) -> bool:
        """``for b in pl.MpDeviceLoader(...)``, also through wrappers and a name bound once:
        ``pbar = tqdm(pl.MpDeviceLoader(...))``; ``for i, b in enumerate(pbar)``."""
        if not isinstance(loop, cst.For):
            return False
        iterable, _ = self.index.unwrap_iterable(loop.iter)
        values = self.index.binding_values(iterable) if isinstance(iterable, cst.Name) else None
        if values is not None and len(values) == 1:
            iterable, _ = self.index.unwrap_iterable(values[0])
        return self.index.device_loader_call(iterable) is not None

    def _is_sync_statement(self, statement: cst.CSTNode) -> bool:
        return (
            isinstance(statement, cst.SimpleStatementLine)
            and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and calls(self, statement.body[0].value, SYNCS, SYNC_SPELLINGS)
        )

    def _movable(self, loop, sync: cst.SimpleStatementLine) -> bool:
        """The sync can move to the end of the body: nothing after it leaves the iteration early
        and it carries no comment of its own."""
        if any(line.comment for line in sync.leading_lines) or sync.trailing_whitespace.comment:
            return False
        body = list(loop.body.body)
        after = body[body.index(sync) + 1 :]
        if after and _is_jump_line(after[-1]):
            after = after[:-1]
        return not any(_leaves_iteration(statement) for statement in after)

    # ------------------------------------------------------------------ reads
    def _plan_loop(self, plan: LoopPlan) -> None:
        loop = plan.loop
        function = self.index.owner(loop)
        tensors = self._tensor_names(function)
        reads = [
            (node, what)
            for node in walk_code(loop.body)
            for what in [self._read_kind(node, tensors)]
            if what is not None and self.index.training_loop_of(node) is loop
        ]
        if not reads:
            return
        by_statement: dict[int, tuple[cst.CSTNode, list]] = {}
        for node, what in reads:
            statement = self.index.statement_of(node)
            by_statement.setdefault(id(statement), (statement, []))[1].append((node, what))
        accumulators = self._accumulators(loop, function, by_statement, plan)
        held = self._held_reads(loop, function, by_statement, plan)
        accumulators.update(held)
        for name in accumulators:
            for node in name_nodes(loop.body, name):
                statement = self.index.statement_of(node)
                if is_load(self.index, node) and self._is_report(statement):
                    by_statement.setdefault(id(statement), (statement, []))
        moved_past_sync = False
        for statement, statement_reads in by_statement.values():
            after_sync = plan.sync is not None and self.index.runs_after(plan.sync, statement)
            accumulator = self._accumulator_of(statement, accumulators)
            if accumulator is not None and accumulator.name in held:
                self._hold(statement_reads)
                continue
            if accumulator is not None:
                self._rewrite_accumulation(statement_reads)
                moved_past_sync = moved_past_sync or (after_sync and plan.sync_movable)
                continue
            if after_sync and not plan.sync_movable:
                self._report_after_fixed_sync(statement, statement_reads)
                self._flag_report_of_many(loop, statement, statement_reads, accumulators)
                self._read_held_values(statement, held)
                continue
            if self._is_report(statement) and self._reads_allowed(statement, statement_reads):
                marker = self._flag_report_of_many(loop, statement, statement_reads, accumulators)
                self._move_into_closure(plan, statement, accumulators, marker)
                moved_past_sync = moved_past_sync or after_sync
                continue
            for node, what in statement_reads:
                self._flag_read(node, what)
        for accumulator in accumulators.values():
            self._convert_uses_outside(loop, function, accumulator)
        if moved_past_sync:
            self._move_sync(plan)

    def _read_kind(self, node: cst.CSTNode, tensors: set[str]) -> str | None:
        """What kind of host read ``node`` is, if it is one."""
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "item" and not node.args:
                return ".item()"
            if (
                self._is_builtin(func, "float")
                and len(node.args) == 1
                and _mentions(node.args[0].value, tensors)
                and not has_item(node.args[0].value)
            ):
                return "float(tensor)"
            if self._is_builtin(func, "print"):
                for arg in node.args:
                    if arg.keyword is None and _is_tensor_value(arg.value, tensors):
                        return "print(tensor)"
        if isinstance(node, cst.FormattedStringExpression) and _is_tensor_value(
            node.expression, tensors
        ):
            return "formatting a tensor"
        return None

    def _is_builtin(self, func: cst.BaseExpression, name: str) -> bool:
        names = self.qualified_names(func)
        if names:
            return f"builtins.{name}" in names
        return isinstance(func, cst.Name) and func.value == name

    def _tensor_names(self, function: cst.CSTNode) -> set[str]:
        """Local names that hold tensors: what ``.backward()``/``.detach()`` is called on, or
        what a ``torch`` function or a ``torch.nn`` module (a criterion) returned."""
        found: set[str] = set()
        not_tensors: set[str] = set()
        for node in walk_code(function):
            if (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in ("backward", "detach")
                and isinstance(node.func.value, cst.Name)
            ):
                found.add(node.func.value.value)
        for binding in self.index.all_bindings:
            if binding.owner is not function or not isinstance(binding.target, cst.Name):
                continue
            name = binding.target.value
            if has_item(binding.value) or isinstance(binding.value, (cst.Integer, cst.Float)):
                not_tensors.add(name)
            elif isinstance(binding.value, cst.Call) and self._returns_tensor(binding.value):
                found.add(name)
        return found - not_tensors

    def _returns_tensor(self, call: cst.Call) -> bool:
        if any(_is_tensor_function(name) for name in self.qualified_names(call.func)):
            return True
        constructors = self.index.binding_values(call.func) or []
        return any(
            isinstance(value, cst.Call)
            and any(n.startswith("torch.nn.") for n in self.qualified_names(value.func))
            for value in constructors
        )

    # ------------------------------------------------------------------ running sums
    def _accumulators(self, loop, function, by_statement, plan) -> dict[str, Accumulator]:
        """Running sums built from reads in ``loop`` whose every use is safe to rewrite."""
        candidates: dict[str, Accumulator] = {}
        for statement, _ in by_statement.values():
            target = _accumulation_target(statement)
            if target is not None:
                candidates.setdefault(target, Accumulator(target, True)).statements.append(
                    statement
                )
        safe = {}
        for name, accumulator in candidates.items():
            integral = self._starts_integral(function, name) and all(
                counts_things(s.body[0].value) for s in accumulator.statements  # type: ignore
            )
            accumulator.integral = integral
            if self._uses_are_safe(loop, function, accumulator, by_statement, plan):
                safe[name] = accumulator
        return safe

    def _starts_integral(self, function, name: str) -> bool:
        return all(
            isinstance(b.value, cst.Integer)
            for b in self.index.all_bindings
            if b.owner is function and isinstance(b.target, cst.Name) and b.target.value == name
        )

    def _uses_are_safe(self, loop, function, accumulator, by_statement, plan) -> bool:
        name = accumulator.name
        if self._used_elsewhere(function, name):
            return False
        accumulations = {id(s) for s in accumulator.statements}
        for node in name_nodes(function, name):
            statement = self.index.statement_of(node)
            if statement is None:
                return False
            if id(statement) in accumulations:
                continue
            small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
            if isinstance(small, cst.Assign) and any(t.target is node for t in small.targets):
                if not isinstance(small.value, (cst.Integer, cst.Float)) or len(small.targets) > 1:
                    return False
                continue
            if isinstance(small, cst.AugAssign) and small.target is node:
                if self._inside(node, loop):
                    return False
                continue
            if self._inside(node, loop):
                # read inside the step: only a report that moves into a closure may do that
                entry = by_statement.get(id(statement))
                after_fixed_sync = (
                    plan.sync is not None
                    and not plan.sync_movable
                    and self.index.runs_after(plan.sync, statement)
                )
                if self._reads_at_interval(statement, loop):
                    continue
                if after_fixed_sync or not self._is_report(statement):
                    return False
                if entry is not None and not self._reads_allowed(statement, entry[1]):
                    return False
                continue
            if self._in_other_training_step(node, loop):
                return False
        return True

    def _used_elsewhere(self, function, name: str) -> bool:
        """``name`` is a global, nonlocal, or used by a nested function or lambda."""
        for node in walk_all(function):
            if isinstance(node, (cst.Global, cst.Nonlocal)) and any(
                n.name.value == name for n in node.names
            ):
                return True
            if (
                isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef))
                and node is not function
            ):
                if name in variable_names(node):
                    return True
        return False

    def _inside(self, node: cst.CSTNode, loop) -> bool:
        return any(ancestor is loop.body for ancestor in self.index.ancestors(node))

    def _in_other_training_step(self, node: cst.CSTNode, loop) -> bool:
        other = self.index.training_loop_of(node)
        return other is not None and other is not loop and id(other) in self.training_loop_ids

    def _accumulator_of(self, statement, accumulators) -> Accumulator | None:
        for accumulator in accumulators.values():
            if any(s is statement for s in accumulator.statements):
                return accumulator
        return None

    # ------------------------------------------------------------------ values held for a report
    def _held_reads(self, loop, function, by_statement, plan) -> dict[str, Accumulator]:
        """``v = X.item()`` (or ``float(X)``) mid-step, at the top of the loop body, where every
        use of ``v`` is a later report in the same step: ``v`` can hold the device value and the
        report read it once the step has run (``v = X.detach()``, ``float(v)`` in the report)."""
        held: dict[str, Accumulator] = {}
        for statement, reads in by_statement.values():
            name = _read_assignment_target(statement, reads)
            if (
                name is None
                or self.index.parent(statement) is not loop.body
                or (plan.sync is not None and self.index.runs_after(plan.sync, statement))
                or self._used_elsewhere(function, name)
            ):
                continue
            if self._only_reported_later(loop, function, name, statement, by_statement):
                counts = reads[0][1] == ".item()" and counts_things(reads[0][0].func.value)
                held[name] = Accumulator(name, counts, [statement])
        return held

    def _only_reported_later(self, loop, function, name: str, assignment, by_statement) -> bool:
        after = self.position(assignment)[0]
        uses = 0
        for node in name_nodes(function, name):
            statement = self.index.statement_of(node)
            if statement is assignment:
                continue
            if (
                statement is None
                or not is_load(self.index, node)
                or self.index.training_loop_of(node) is not loop
                or self.position(statement)[0] <= after
                or not self._is_report(statement)
                or not self._reads_allowed(statement, by_statement.get(id(statement), (0, []))[1])
            ):
                return False
            if (
                self._is_progress_bar(statement)
                and self._interval_guard(statement) is None
                and not self._bar_can_be_throttled(loop)
            ):
                return False  # a progress bar that cannot be throttled keeps reading per step
            uses += 1
        return uses > 0

    def _bar_can_be_throttled(self, loop) -> bool:
        """A progress bar of ``loop`` not under an interval condition can be put under one (by
        TPU124): the loop has an index or an interval block of its own."""
        return self.THROTTLES_PROGRESS_BARS and (
            isinstance(loop, cst.For) or self._existing_guard(loop) is not None
        )

    def _reads_at_interval(self, statement, loop) -> bool:
        """A plain statement (not a report) under the loop's interval condition, e.g.
        ``cur_loss = total_loss / log_interval`` under ``if batch % log_interval == 0:``: it
        reads the sum once per interval, where the report that follows needs the number."""
        return (
            isinstance(statement, cst.SimpleStatementLine)
            and not self._is_report(statement)
            and self._interval_guard(statement) is not None
            and self.index.training_loop_of(statement) is loop
        )

    # ------------------------------------------------------------------ reports
    def _is_report(self, statement: cst.CSTNode) -> bool:
        call = statement_call(statement)
        if call is None:
            return False
        func = call.func
        if self._is_builtin(func, "print"):
            return True
        return isinstance(func, cst.Attribute) and func.attr.value in REPORTING_METHODS

    def _is_progress_bar(self, statement: cst.CSTNode) -> bool:
        call = statement_call(statement)
        return (
            call is not None
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value in PROGRESS_BAR_METHODS
        )

    def _reads_allowed(self, statement, reads) -> bool:
        """A report whose reads all sit in its arguments (not in a nested closure)."""
        return all(self.index.statement_of(node) is statement for node, _ in reads)

    def _ancestors_within(self, node, top) -> Iterator[cst.CSTNode]:
        for ancestor in self.index.ancestors(node):
            yield ancestor
            if ancestor is top:
                return

    # ------------------------------------------------------------------ throttling
    def _interval_guard(self, statement) -> cst.If | None:
        for ancestor in self.index.ancestors(statement):
            if isinstance(ancestor, (cst.For, cst.While, cst.FunctionDef)):
                return None
            if isinstance(ancestor, cst.If) and _is_interval_test(ancestor.test):
                return ancestor
        return None

    def _existing_guard(self, loop) -> cst.If | None:
        """The loop's own interval block (``if i % log_interval == 0:``) whose condition reads
        nothing the iteration changes before it (only the loop target and outer values)."""
        changing = names_assigned_in(loop) - set(
            names_in_target(loop.target) if isinstance(loop, cst.For) else ()
        )
        for node in walk_code(loop.body):
            if (
                isinstance(node, cst.If)
                and _is_interval_test(node.test)
                and self.index.training_loop_of(node) is loop
                and not _mentions(node.test, changing)
            ):
                return node
        return None

    # ================================================================== rewriting
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        return self.call_edits.get(id(original_node), updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self.name_edits.get(id(original_node), updated_node)


# ---------------------------------------------------------------------- helpers
def _is_tensor_function(qualified: str) -> bool:
    """``torch.randn``, ``torch.nn.functional.cross_entropy``: functions returning tensors (not
    ``torch.device``, optimizers, modules or ``torch.utils`` classes)."""
    if qualified.startswith("torch.nn.functional."):
        return True
    return (
        qualified.count(".") == 1
        and qualified.startswith("torch.")
        and qualified
        not in (
            "torch.device",
            "torch.Generator",
            "torch.dtype",
        )
    )


def variable_names(node: cst.CSTNode) -> set[str]:
    """Names used as variables under ``node`` (not attribute names or keywords)."""
    skipped = set()
    for n in walk_all(node):
        if isinstance(n, cst.Attribute):
            skipped.add(id(n.attr))
        elif isinstance(n, cst.Arg) and n.keyword is not None:
            skipped.add(id(n.keyword))
    return {n.value for n in walk_all(node) if isinstance(n, cst.Name) and id(n) not in skipped}


def is_item_call(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "item"
        and not node.args
    )


def has_item(node: cst.CSTNode) -> bool:
    return any(is_item_call(n) for n in walk_all(node))


def _mentions(node: cst.CSTNode, names: set[str]) -> bool:
    return any(isinstance(n, cst.Name) and n.value in names for n in walk_all(node))


def _is_tensor_value(node: cst.CSTNode, tensors: set[str]) -> bool:
    """A tensor name, or arithmetic on one (``loss / n``): formatting it reads the device."""
    if isinstance(node, cst.Name):
        return node.value in tensors
    if isinstance(node, cst.BinaryOperation):
        parts = [node.left, node.right]
        return all(
            isinstance(p, (cst.Name, cst.Integer, cst.Float, cst.BinaryOperation)) for p in parts
        ) and any(_is_tensor_value(p, tensors) for p in parts)
    return False


def counts_things(node: cst.CSTNode) -> bool:
    """``node`` counts things (a comparison or ``.eq()`` summed) and is never made floating."""
    if isinstance(node, cst.AugAssign):
        value = node.value
        return is_item_call(value) and counts_things(value.func.value)  # type: ignore[attr-defined]
    has_comparison = any(
        isinstance(n, cst.Comparison)
        or (isinstance(n, cst.Attribute) and n.attr.value in COUNTING_CALLS)
        for n in walk_all(node)
    )
    floating = any(
        isinstance(n, cst.Attribute) and n.attr.value in FLOATING_CALLS for n in walk_all(node)
    ) or any(
        isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Divide)
        for n in walk_all(node)
    )
    return has_comparison and not floating


def detached(receiver: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(receiver, cst.Name("detach")))


# Tensor methods whose result can share storage with their receiver.
VIEW_METHODS = frozenset(
    {"view", "view_as", "reshape", "reshape_as", "squeeze", "unsqueeze", "flatten", "t",
     "transpose", "permute", "expand", "expand_as", "narrow", "select", "detach", "contiguous",
     "as_strided", "unflatten", "movedim", "diagonal", "real", "imag"}
)  # fmt: skip


def is_fresh_value(node: cst.BaseExpression) -> bool:
    """``node`` computes a new tensor (``out.mean()``, ``clip_grad_norm_(...)``), not a view."""
    if not isinstance(node, cst.Call):
        return False
    return not (isinstance(node.func, cst.Attribute) and node.func.attr.value in VIEW_METHODS)


def _read_assignment_target(statement: cst.CSTNode, reads) -> str | None:
    """``v`` of ``v = X.item()`` / ``v = float(X)``: one plain name assigned one read."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    small = statement.body[0]
    if not (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and isinstance(small.targets[0].target, cst.Name)
        and len(reads) == 1
        and reads[0][0] is small.value
        and reads[0][1] in (".item()", "float(tensor)")
    ):
        return None
    return small.targets[0].target.value


def _accumulation_target(statement: cst.CSTNode) -> str | None:
    """``v`` of ``v += <reads>`` / ``v -= <reads>`` (a plain local name)."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    small = statement.body[0]
    if (
        isinstance(small, cst.AugAssign)
        and isinstance(small.operator, (cst.AddAssign, cst.SubtractAssign))
        and isinstance(small.target, cst.Name)
    ):
        return small.target.value
    return None


def _is_interval_test(test: cst.BaseExpression) -> bool:
    return any(
        isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Modulo)
        for n in walk_all(test)
    )


def _is_jump_line(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and isinstance(
        statement.body[0], (cst.Continue, cst.Break)
    )


def _leaves_iteration(statement: cst.CSTNode) -> bool:
    """``statement`` may end the iteration before its end: continue, break, return, raise."""
    for node in walk_code(statement):
        if isinstance(node, (cst.Return, cst.Raise)):
            return True
        if isinstance(node, (cst.Continue, cst.Break)) and not _inside_nested_loop(statement, node):
            return True
    return False


def _inside_nested_loop(top: cst.CSTNode, target: cst.CSTNode) -> bool:
    return bool(_loop_depth_search(top, target, False))


def _loop_depth_search(node: cst.CSTNode, target: cst.CSTNode, in_loop: bool) -> bool | None:
    """Whether a loop below ``node`` encloses ``target`` (None: ``target`` is not there). Not a
    closure: a recursive inner function is a reference cycle that keeps the tree alive."""
    if node is target:
        return in_loop
    for child in node.children:
        found = _loop_depth_search(child, target, in_loop or isinstance(node, (cst.For, cst.While)))
        if found is not None:
            return found
    return None


def name_nodes(function: cst.CSTNode, name: str) -> list[cst.Name]:
    return [n for n in walk_code(function) if isinstance(n, cst.Name) and n.value == name]


def is_load(index: ModuleIndex, node: cst.Name) -> bool:
    """``node`` reads a variable (not an attribute name, keyword, or assignment target)."""
    parent = index.parent(node)
    if isinstance(parent, cst.Attribute) and parent.attr is node:
        return False
    if isinstance(parent, (cst.Arg, cst.Param)) and parent.keyword is node:  # type: ignore
        return False
    if isinstance(parent, cst.Param):
        return False
    if isinstance(parent, cst.AssignTarget) and parent.target is node:
        return False
    if isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node:
        return False
    if isinstance(parent, (cst.For, cst.CompFor)) and parent.target is node:
        return False
    if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AsName)):
        return False
    if isinstance(parent, cst.Element):
        grand = index.parent(parent)
        holder = index.parent(grand) if grand is not None else None
        if isinstance(holder, (cst.AssignTarget, cst.For, cst.CompFor)):
            return False
    return True


def names_assigned_in(loop: cst.For | cst.While) -> set[str]:
    """Names the loop rebinds every iteration: its target and what its body assigns."""
    names = set(names_in_target(loop.target)) if isinstance(loop, cst.For) else set()
    for node in walk_code(loop.body):
        if isinstance(node, cst.AssignTarget):
            names.update(names_in_target(node.target))
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)) and isinstance(node.target, cst.Name):
            names.add(node.target.value)
        elif isinstance(node, (cst.For, cst.CompFor)):
            names.update(names_in_target(node.target))
        elif isinstance(node, cst.AsName) and isinstance(node.name, cst.Name):
            names.add(node.name.value)
    return names


def suggested_name(call: cst.Call, item: cst.Call) -> str:
    """A parameter name for a computed tensor: its keyword (``acc=...``) or last attribute."""
    for arg in call.args:
        if arg.keyword is not None and arg.value is item:
            return arg.keyword.value
    receiver = item.func.value  # type: ignore[attr-defined]
    if isinstance(receiver, cst.Attribute):
        return receiver.attr.value
    return "value"


def fresh_name(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    for suffix in range(2, 100):
        if f"{name}_{suffix}" not in taken:
            return f"{name}_{suffix}"
    return name


def replace_nodes(node: cst.CSTNode, replacements: dict[int, cst.BaseExpression]):
    return node.visit(_Replacer(replacements))


class _Replacer(cst.CSTTransformer):
    """Puts ``replacements[id(node)]`` in each node's place. (Not a class made per call: a
    class refers to itself, and would hold the nodes until the cycle collector runs.)"""

    def __init__(self, replacements: dict[int, cst.BaseExpression]) -> None:
        super().__init__()
        self._replacements = replacements

    def on_leave(self, original, updated):
        return self._replacements.get(id(original), updated)
