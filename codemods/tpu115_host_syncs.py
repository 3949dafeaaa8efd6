"""TPU115: keep device->host reads (``.item()``, ``float(t)``, printing a tensor) out of the step."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import (
    MARKER_PREFIX,
    XM,
    FindingDoc,
    Invalid,
    Safety,
    TpuCodemod,
    Valid,
    code_of,
    statement_call,
    walk_all,
    with_marker_comments,
)
from ._loops import (
    AUTOGRAD_FUNCTIONS,
    XLA_OPTIMIZER_STEP,
    ModuleIndex,
    calls,
    may_contain_training_step,
    named_like_optimizer,
    names_in_target,
    new_statement,
    refers_to,
    walk_code,
)
from ._meters import from_device, kept_values, step_values
from ._statements import AppliesStatementEdits, Replacement

PER_STEP_READ = "TPU241"
PER_STEP_REPORT = "TPU242"
KEPT_DEVICE_VALUE = "TPU243"

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


class HostSyncs(AppliesStatementEdits, TpuCodemod):
    """
    What it does
        Inside a training loop (a loop whose body runs a backward or an optimizer step) whose
        step ends at a known boundary (it iterates a ``pl.MpDeviceLoader``, or its body calls
        ``torch_xla.sync()``), the reads of device values are moved out of the step:

        - Reporting calls (``print``, ``logger.info``, ``writer.add_scalar``, ``tqdm.write``...)
          that read a tensor (``.item()``, ``float(t)``, ``f"{loss:.3f}"``, ``print(loss)``) are
          registered with ``xm.add_step_closure(lambda ...: call, args=(...))``: they run when
          the step's graph has executed, and print the same text. The tensors they read, and
          the Python values the loop changes (the step counter), are passed in ``args`` so the
          closure sees this step's values. A call already under an interval condition
          (``if step % 100 == 0:``) keeps its condition; only its read moves into the closure.
        - Running sums of a local variable (``total += loss.item()``,
          ``correct += (pred == y).sum().item()``, ``running += loss.item() * x.size(0)``)
          stay on the device (``total += loss.detach()``, ``correct += (pred == y).sum()``);
          every later use outside the loop reads the value once, as ``float(total)`` (or
          ``int(correct)`` for a count), a reporting call inside the loop reads it in its
          closure, and a computation under the loop's interval condition reads it there, once
          per interval (``cur_loss = float(total) / log_interval``). When a use cannot be
          proven safe (the sum is compared, appended, returned per step, reassigned or used by
          another function) nothing is rewritten and the read is flagged TPU241.
        - Progress-bar updates (``pbar.set_postfix(loss=loss.item())``,
          ``set_description(...)``) are throttled: they join the loop's own interval block
          (``if step % log_interval == 0:``) when it follows them, reuse its condition
          otherwise, and get ``if step % LOG_EVERY == 0:`` when the loop has none, with the
          loop index (the loop is wrapped in ``enumerate`` when it has none) and a module
          constant ``LOG_EVERY`` (option ``log_every``, default 10).
        - When a rewritten read follows the loop's ``torch_xla.sync()`` (TPU102 places it right
          after the optimizer step), the sync moves to the end of the body, so each closure runs
          at the end of its own step (and the last one is not lost). It stays where it is when
          a ``continue``/``break``/``return`` follows it; then reports after it, and any read
          under the loop's interval condition, are left alone (they read values the sync
          already computed).
        - A value read into a variable mid-step (``d_x = output.mean().item()`` at the top of
          the loop body) whose only uses are later reports of the same step stays on the
          device (``d_x = output.mean().detach()``); the reports read it after the step, as
          ``float(d_x)`` (``int`` for a count), in their closure or after the sync.
        - Any other read inside the step (``if loss.item() < best:``,
          ``history.append(loss.item())``) is flagged TPU241. Reads outside training loops
          (evaluation loops, end-of-epoch summaries) are left alone.
        - A report that runs in every step (under no condition) and reads several device
          values stays as it is, after the step or in its closure, and is flagged TPU242: each
          value is a copy of its own, every step.
        - A call in the step that hands a device value to an object of a class of this file
          which keeps it in attributes and formats them (``top1.update(acc1[0], n)`` on an
          ``AverageMeter``) is flagged TPU243, naming the attributes: each one shown is a copy
          of its own whenever the object is printed.

        The rule runs last in the pipeline, after TPU102 has placed the step boundary and TPU103
        the device loaders: where the boundary is decides which reads are mid-step.

    Why
        A read of a lazy tensor inside the step makes torch_xla cut the graph there, run the
        part built so far and copy the value to the host, then build and run the rest: two
        executions and a device->host wait per step (pytorch/xla #2120, #1777, #5058). A step
        closure reads after the step's graph has run, costing one copy and no execution; a sum
        kept on the device costs nothing until it is read. Sums kept on the device add in fp32
        where Python added in float64: the last digits of a long sum may differ.

        Logging that already runs at an interval also moves into a closure: under the
        condition it still read in the middle of the step, cutting that step's graph in two.
        Closures run in order at the end of the step, so their lines come after any line the
        rest of that step prints directly. A sum reset at the interval (``running = 0.0``)
        makes the step after the reset a second graph, compiled once. A value read into a
        variable that is used for anything but reports (``history.append(loss_val)``) is
        flagged rather than followed.

    Example
        Before::

            for step, (x, y) in enumerate(pbar):
                loss = criterion(model(x), y)
                loss.backward()
                xm.optimizer_step(optimizer)
                torch_xla.sync()
                total += loss.item()
                pbar.set_postfix(loss=loss.item())
                if step % 50 == 0:
                    print(f"step {step} loss {loss.item():.4f}")
            print(f"mean loss {total / len(loader):.4f}")

        After::

            for step, (x, y) in enumerate(pbar):
                loss = criterion(model(x), y)
                loss.backward()
                xm.optimizer_step(optimizer)
                total += loss.detach()
                if step % 50 == 0:
                    xm.add_step_closure(lambda loss: pbar.set_postfix(loss=loss.item()), args=(loss,))
                    xm.add_step_closure(
                        lambda step, loss: print(f"step {step} loss {loss.item():.4f}"),
                        args=(step, loss),
                    )
                torch_xla.sync()
            print(f"mean loss {float(total) / len(loader):.4f}")
    """

    CODE = "TPU115"
    NAME = "host-syncs-in-step"
    SUMMARY = "Move per-step .item() reads into step closures, device-side sums and throttled bars"
    SAFETY = Safety.SEMANTIC
    # No NUMERICS: the training computes the same losses; only logged sums add in fp32.
    TRIGGERS = ("backward", ".step(", "optimizer_step", "autograd")  # reads leave training steps

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return may_contain_training_step(facts)  # the step markers of _is_step_marker

    OPTIONS = {"log_every": 10}
    FINDINGS = {
        PER_STEP_REPORT: FindingDoc(
            "per-step report of several device values: one device->host copy for each, every step",
            why="A report that runs in every step (print(... loss_d.item(), loss_g.item(), d_x "
            "...)) copies each tensor it shows to the host on its own: each copy waits for the "
            "device, and N values cost N round trips per step even after the step's graph has "
            "run. The rule keeps the report where it is and as often as it runs (that is the "
            "script's choice), and it cannot prove the values share one dtype and shape to pack "
            "them.",
            what_to_do="Report every N steps (if step % N == 0:), or pack the values into one "
            "tensor before the step's torch_xla.sync() (shown = torch.stack([loss_d.detach(), "
            "loss_g.detach(), d_x])) and read it once after it (loss_d, loss_g, d_x = "
            "shown.tolist()): one copy per step, no extra graph.",
        ),
        KEPT_DEVICE_VALUE: FindingDoc(
            "a meter object keeps a device value: each attribute it shows is a device->host copy",
            why="top1.update(acc1[0], n) hands a tensor to an object of a class of this file "
            "(an AverageMeter), which keeps it in self.val and, through arithmetic, in self.sum "
            "and self.avg. The step reads nothing, but every time the object is formatted "
            "(progress.display(), print(meter)) each attribute it shows is copied from the "
            "device on its own: two meters showing val and avg cost four round trips per "
            "display. The rule cannot change the class: other code may rely on what it keeps.",
            what_to_do="Keep the meter on the device (self.sum += val * n costs nothing) and join "
            "the reads where it is shown: pack the values the display formats into one tensor "
            "after the step's sync and copy it once (shown = torch.stack([top1.val, top1.avg, "
            "top5.val, top5.avg]).tolist()), then format those numbers: one copy per display "
            "instead of one per value.",
        ),
        PER_STEP_READ: FindingDoc(
            "per-step host sync: a tensor is read on the host inside the training step",
            why="Reading a tensor's value (.item(), float(t), formatting or printing it, "
            "comparing it in an if) in the middle of a step forces torch_xla to run the graph "
            "built so far and copy the result to the host, then build the rest of the step as "
            "a second graph: every step pays an extra execution and waits for the device.",
            what_to_do="Keep the value on the device (accumulate loss.detach() instead of "
            "loss.item()), read it once per logging interval or per epoch, and do the reading "
            "in xm.add_step_closure(fn, args=(tensor,)) so it happens after the step's graph "
            "has run. Decisions on a tensor's value (early stopping, best-loss checks) belong "
            "at the end of an epoch, not in every step.",
        ),
    }
    VALID = [
        Valid(
            "import torch\n"
            "\n"
            "\n"
            "for x, y in loader:\n"
            "    loss = model(x, y)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
            '    print(f"loss {loss.item():.4f}")\n',
            why="a loop without a step boundary is TPU102's business: closures would never run",
        ),
        Valid(
            "import torch\n"
            "import torch_xla\n"
            "\n"
            "for x, y in loader:\n"
            "    loss = model(x, y)\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
            "    torch_xla.sync()\n"
            "grad_norm = sum(p.grad.norm() ** 2 for p in model.parameters()).item()\n"
            'print(f"final loss {loss.item():.4f} grad norm {grad_norm:.3f}")\n',
            why="a training loop over parameters inside the step is bookkeeping, and its read is outside any step",
        ),
    ]
    INVALID = []  # the cases are in files: cases/

    def __init__(self, context) -> None:
        super().__init__(context)
        self.call_edits: dict[int, cst.BaseExpression] = {}  # id(original Call) -> new expr
        self.name_edits: dict[int, cst.BaseExpression] = {}  # id(original Name) -> new expr
        self.loop_edits: dict[int, cst.BaseAssignTargetExpression] = {}  # id(For) -> new target
        self.needs_log_every = False

    # ================================================================== planning
    def visit_Module(self, node: cst.Module) -> bool:
        self.index = ModuleIndex(self, node)
        self.log_every_bound = any(
            isinstance(b.target, cst.Name) and b.target.value == LOG_EVERY and b.owner is node
            for b in self.index.all_bindings
        )
        loops = self._training_loops()
        self.training_loop_ids = {id(loop) for loop in loops}
        for loop in loops:
            self._flag_kept_device_values(loop)
            plan = self._boundary(loop)
            if plan is not None and isinstance(loop.body, cst.IndentedBlock):
                self._plan_loop(plan)
        if self.needs_log_every and not self.log_every_bound:
            self._add_log_every_constant(node)
        return True

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
            for node in _name_nodes(loop.body, name):
                statement = self.index.statement_of(node)
                if _is_load(self.index, node) and self._is_report(statement):
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
            self.edits.remove(plan.sync)
            self.edits.append_to(loop.body, plan.sync.with_changes(leading_lines=()))
            self.record_rewrite()

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
                and not _has_item(node.args[0].value)
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
            if _has_item(binding.value) or isinstance(binding.value, (cst.Integer, cst.Float)):
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
                _counts(s.body[0].value) for s in accumulator.statements  # type: ignore
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
        for node in _name_nodes(function, name):
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
                if name in _variable_names(node):
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
                counts = reads[0][1] == ".item()" and _counts(reads[0][0].func.value)
                held[name] = Accumulator(name, counts, [statement])
        return held

    def _only_reported_later(self, loop, function, name: str, assignment, by_statement) -> bool:
        after = self.position(assignment)[0]
        uses = 0
        for node in _name_nodes(function, name):
            statement = self.index.statement_of(node)
            if statement is assignment:
                continue
            if (
                statement is None
                or not _is_load(self.index, node)
                or self.index.training_loop_of(node) is not loop
                or self.position(statement)[0] <= after
                or not self._is_report(statement)
                or not self._reads_allowed(statement, by_statement.get(id(statement), (0, []))[1])
            ):
                return False
            if (
                self._is_progress_bar(statement)
                and self._interval_guard(statement) is None
                and not (isinstance(loop, cst.For) or self._existing_guard(loop) is not None)
            ):
                return False  # a progress bar that cannot be throttled keeps reading per step
            uses += 1
        return uses > 0

    def _hold(self, reads) -> None:
        """``v = X.item()`` -> ``v = X.detach()``; ``.detach().clone()`` when ``X`` may be a
        view of a tensor the rest of the step changes in place (a name, an attribute, an
        index, a view method): the report must see this moment's value."""
        node, what = reads[0]
        receiver = node.func.value if what == ".item()" else node.args[0].value
        held = _detached(receiver)
        if not _is_fresh_value(receiver):
            held = cst.Call(cst.Attribute(held, cst.Name("clone")))
        self.call_edits[id(node)] = held
        self.record_rewrite()

    def _read_held_values(self, statement, held: dict[str, Accumulator]) -> None:
        """A report after a sync that stays put reads a held value where it stands."""
        for name, value in held.items():
            for node in _name_nodes(statement, name):
                if _is_load(self.index, node):
                    self.name_edits[id(node)] = value.read()
                    self.record_rewrite()

    def _rewrite_accumulation(self, reads) -> None:
        """``v += X.item()`` -> ``v += X.detach()`` (``X`` when it counts: no gradient);
        ``v += float(X)`` -> ``v += X.detach()``."""
        for node, what in reads:
            if what == ".item()":
                receiver = node.func.value
                self.call_edits[id(node)] = receiver if _counts(receiver) else _detached(receiver)
            elif what == "float(tensor)":
                self.call_edits[id(node)] = _detached(node.args[0].value)
            else:  # a formatted tensor in a sum: leave it
                continue
            self.record_rewrite()

    def _convert_uses_outside(self, loop, function, accumulator: Accumulator) -> None:
        """Every read of the sum outside the loop takes its value once: ``float(total)``; so
        does a computation from it at the loop's logging interval (``_reads_at_interval``)."""
        for node in _name_nodes(function, accumulator.name):
            if not _is_load(self.index, node):
                continue
            if self._inside(node, loop):
                statement = self.index.statement_of(node)
                if self._is_report(statement) or not self._reads_at_interval(statement, loop):
                    continue
            self.name_edits[id(node)] = accumulator.read()
            self.record_rewrite()

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

    def _report_after_fixed_sync(self, statement, reads) -> None:
        """After a sync that must stay put, a report reads values the sync computed: fine, and
        so does any read under the loop's interval condition (``lossf = loss.item()`` under
        ``if it % log_interval == 0:``): one copy per interval, no graph cut. A per-step
        progress bar or any other per-step read still reads every step: flag it."""
        if self._is_report(statement) and not self._is_progress_bar(statement):
            return
        if self._interval_guard(statement) is not None:
            return
        for node, what in reads:
            self._flag_read(node, what)

    def _flag_kept_device_values(self, loop) -> None:
        """Calls in the step that hand a device value to an object that keeps and shows it."""
        device_names = step_values(loop, self._tensor_names(self.index.owner(loop)))

        def is_device_value(value: cst.BaseExpression) -> bool:
            return not _has_item(value) and from_device(value, device_names)

        for node in walk_code(loop.body):
            if not isinstance(node, cst.Call) or self.index.training_loop_of(node) is not loop:
                continue
            for kept in kept_values(self.index, node, is_device_value):
                shown = ", ".join(f"self.{a}" for a in kept.attributes)
                self.flag(
                    node,
                    KEPT_DEVICE_VALUE,
                    f"{kept.meter} ({kept.cls}) keeps the device value {code_of(kept.value)} in "
                    f"{shown}: each one shown is a device->host copy whenever {kept.meter} is "
                    "formatted",
                )

    def _flag_read(self, node: cst.CSTNode, what: str) -> None:
        self.flag(node, PER_STEP_READ, f"per-step host sync: {what} inside the training step")

    def _flag_report_of_many(self, loop, statement, reads, accumulators) -> str | None:
        """A report that runs in every step (under no condition) and reads several device values
        costs that many device->host copies per step, wherever it reads them. Returns the
        finding's marker, for a closure that replaces the statement to carry."""
        if not self._is_report(statement) or self._is_progress_bar(statement):
            return None  # a progress bar is throttled, or each of its reads flagged
        if any(isinstance(a, (cst.If, cst.Try)) for a in self._ancestors_within(statement, loop)):
            return None
        values = [code_of(node) for node, _ in reads] + [
            name
            for name in accumulators
            if any(_is_load(self.index, node) for node in _name_nodes(statement, name))
        ]
        if len(values) < 2:
            return None
        message = (
            f"per-step report of {len(values)} device values ({', '.join(values)}): "
            f"{len(values)} device->host copies every step"
        )
        self.flag(statement_call(statement), PER_STEP_REPORT, message)
        return f"{MARKER_PREFIX} {PER_STEP_REPORT} {message}"

    def _move_into_closure(self, plan: LoopPlan, statement, accumulators, marker=None) -> None:
        loop = plan.loop
        call = statement_call(statement)
        assert call is not None
        closure = self._closure_call(loop, call, accumulators)
        line = cst.SimpleStatementLine(
            [cst.Expr(closure)], trailing_whitespace=statement.trailing_whitespace
        )
        if self._is_progress_bar(statement) and self._interval_guard(statement) is None:
            if not self._throttle(loop, statement, line):
                tensors = self._tensor_names(self.index.owner(loop))
                for node in walk_code(statement):
                    what = self._read_kind(node, tensors)
                    if what:
                        self._flag_read(node, what)
                return
        else:
            line = line.with_changes(leading_lines=statement.leading_lines)
            if marker is not None:
                line = with_marker_comments(line, [marker])
            self.edits.replace(statement, Replacement((line,)))
        self.require_import(XM)
        self.record_rewrite()

    def _throttle(self, loop, statement, line: cst.SimpleStatementLine) -> bool:
        """Put ``line`` (a progress-bar closure replacing ``statement``) under an interval
        condition: into the loop's own interval block when that block follows ``statement``
        directly, else under a new ``if``. False when the loop offers no step count."""
        guard = self._existing_guard(loop)
        place = self.index.block_and_index(statement)
        if guard is not None and place is not None and isinstance(guard.body, cst.IndentedBlock):
            block, position = place
            if position + 1 < len(block.body) and block.body[position + 1] is guard:
                self.edits.remove(statement)
                self.edits.insert_before(guard.body.body[0], line)
                return True
        if guard is not None:
            test = guard.test.deep_clone()
        else:
            index = self._loop_index(loop)
            if index is None:
                return False
            self.needs_log_every = True
            test = cst.parse_expression(f"{index} % {LOG_EVERY} == 0")
        guarded = cst.If(test=test, body=cst.IndentedBlock([line]))
        self.edits.replace(
            statement, Replacement((guarded.with_changes(leading_lines=statement.leading_lines),))
        )
        return True

    def _closure_call(self, loop, call: cst.Call, accumulators) -> cst.Call:
        """``xm.add_step_closure(lambda <values>: <call>, args=(<values>,))``."""
        changing = _names_assigned_in(loop)
        tensors = self._tensor_names(self.index.owner(loop))
        used = _variable_names(call)
        params: dict[str, cst.BaseExpression] = {}  # parameter -> what the step passes
        replacements: dict[int, cst.BaseExpression] = {}
        for node in walk_all(call):
            if isinstance(node, cst.Call) and _is_item_call(node):
                receiver = node.func.value
                if not isinstance(receiver, cst.Name):
                    name = _fresh(_suggested_name(call, node), used | set(params))
                    params[name] = receiver
                    replacements[id(receiver)] = cst.Name(name)
        for node in walk_all(call):
            if not isinstance(node, cst.Name) or id(node) in replacements:
                continue
            if any(id(a) in replacements for a in self._ancestors_within(node, call)):
                continue
            if not _is_load(self.index, node) or node is call.func:
                continue
            name = node.value
            if name in accumulators:
                params.setdefault(name, cst.Name(name))
                replacements[id(node)] = accumulators[name].read()
            elif name in changing or name in tensors:
                params.setdefault(name, cst.Name(name))
        body = _replace_nodes(call, replacements)
        function: cst.BaseExpression
        if (
            [code_of(a.value) for a in body.args] == list(params)
            and all(a.keyword is None and not a.star for a in body.args)
            and isinstance(body.func, cst.Name)
        ):
            function = body.func
        else:
            function = cst.Lambda(
                params=cst.Parameters([cst.Param(cst.Name(p)) for p in params]), body=body
            )
        values = [cst.Element(value) for value in params.values()]
        arguments = [cst.Arg(function)]
        if values:
            values[-1] = values[-1].with_changes(comma=cst.Comma())
            if len(values) > 1:
                values[-1] = values[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            arguments.append(
                cst.Arg(
                    cst.Tuple(values),
                    keyword=cst.Name("args"),
                    equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""),
                        whitespace_after=cst.SimpleWhitespace(""),
                    ),
                )
            )
        return cst.Call(cst.parse_expression("xm.add_step_closure"), arguments)

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
        changing = _names_assigned_in(loop) - set(
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

    def _loop_index(self, loop) -> str | None:
        if not isinstance(loop, cst.For):
            return None
        _, indexed = self.index.unwrap_iterable(loop.iter)
        if indexed and isinstance(loop.target, cst.Tuple) and loop.target.elements:
            first = loop.target.elements[0].value
            return first.value if isinstance(first, cst.Name) else None
        if id(loop) in self.loop_edits:
            return code_of(self.loop_edits[id(loop)].elements[0].value)  # type: ignore
        function = self.index.owner(loop)
        taken = _variable_names(function)
        name = _fresh("step", taken)
        target = loop.target
        if isinstance(target, cst.Tuple):
            target = target.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        self.loop_edits[id(loop)] = cst.Tuple(
            [cst.Element(cst.Name(name)), cst.Element(target)], lpar=[], rpar=[]
        )
        return name

    def _add_log_every_constant(self, module: cst.Module) -> None:
        imports = []  # the imports at the top of the file, before the first def or class
        for statement in module.body:
            if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                break
            if isinstance(statement, cst.SimpleStatementLine) and isinstance(
                statement.body[0], (cst.Import, cst.ImportFrom)
            ):
                imports.append(statement)
        constant = new_statement(
            f"{LOG_EVERY} = {int(self.option('log_every'))}"
            "  # steps between progress-bar updates (each one reads the device)"
        ).with_changes(leading_lines=[cst.EmptyLine()])
        if imports:
            self.edits.insert_after(imports[-1], constant)
        elif module.body:
            self.edits.insert_before(module.body[0], constant.with_changes(leading_lines=()))
        self.record_rewrite()

    # ================================================================== rewriting
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        return self.call_edits.get(id(original_node), updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self.name_edits.get(id(original_node), updated_node)

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        if id(original_node) not in self.loop_edits:
            return updated_node
        return updated_node.with_changes(
            target=self.loop_edits[id(original_node)],
            iter=cst.Call(cst.Name("enumerate"), [cst.Arg(updated_node.iter)]),
        )


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


def _variable_names(node: cst.CSTNode) -> set[str]:
    """Names used as variables under ``node`` (not attribute names or keywords)."""
    skipped = set()
    for n in walk_all(node):
        if isinstance(n, cst.Attribute):
            skipped.add(id(n.attr))
        elif isinstance(n, cst.Arg) and n.keyword is not None:
            skipped.add(id(n.keyword))
    return {n.value for n in walk_all(node) if isinstance(n, cst.Name) and id(n) not in skipped}


def _is_item_call(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "item"
        and not node.args
    )


def _has_item(node: cst.CSTNode) -> bool:
    return any(_is_item_call(n) for n in walk_all(node))


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


def _counts(node: cst.CSTNode) -> bool:
    """``node`` counts things (a comparison or ``.eq()`` summed) and is never made floating."""
    if isinstance(node, cst.AugAssign):
        value = node.value
        return _is_item_call(value) and _counts(value.func.value)  # type: ignore[attr-defined]
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


def _detached(receiver: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(receiver, cst.Name("detach")))


# Tensor methods whose result can share storage with their receiver.
VIEW_METHODS = frozenset(
    {"view", "view_as", "reshape", "reshape_as", "squeeze", "unsqueeze", "flatten", "t",
     "transpose", "permute", "expand", "expand_as", "narrow", "select", "detach", "contiguous",
     "as_strided", "unflatten", "movedim", "diagonal", "real", "imag"}
)  # fmt: skip


def _is_fresh_value(node: cst.BaseExpression) -> bool:
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


def _name_nodes(function: cst.CSTNode, name: str) -> list[cst.Name]:
    return [n for n in walk_code(function) if isinstance(n, cst.Name) and n.value == name]


def _is_load(index: ModuleIndex, node: cst.Name) -> bool:
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


def _names_assigned_in(loop: cst.For | cst.While) -> set[str]:
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


def _suggested_name(call: cst.Call, item: cst.Call) -> str:
    """A parameter name for a computed tensor: its keyword (``acc=...``) or last attribute."""
    for arg in call.args:
        if arg.keyword is not None and arg.value is item:
            return arg.keyword.value
    receiver = item.func.value  # type: ignore[attr-defined]
    if isinstance(receiver, cst.Attribute):
        return receiver.attr.value
    return "value"


def _fresh(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    for suffix in range(2, 100):
        if f"{name}_{suffix}" not in taken:
            return f"{name}_{suffix}"
    return name


def _replace_nodes(node: cst.CSTNode, replacements: dict[int, cst.BaseExpression]):
    return node.visit(_Replacer(replacements))


class _Replacer(cst.CSTTransformer):
    """Puts ``replacements[id(node)]`` in each node's place. (Not a class made per call: a
    class refers to itself, and would hold the nodes until the cycle collector runs.)"""

    def __init__(self, replacements: dict[int, cst.BaseExpression]) -> None:
        super().__init__()
        self._replacements = replacements

    def on_leave(self, original, updated):
        return self._replacements.get(id(original), updated)
