"""TPU115: keep device->host reads (``.item()``, ``float(t)``, printing a tensor) out of the step."""

from __future__ import annotations


import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import (
    MARKER_PREFIX,
    XM,
    FindingDoc,
    Safety,
    TpuCodemod,
    Valid,
    code_of,
    statement_call,
    walk_all,
    with_marker_comments,
)
from ._host_reads import (
    Accumulator,
    LoopPlan,
    PlansHostReads,
    counts_things,
    detached,
    fresh_name,
    is_fresh_value,
    is_item_call,
    is_load,
    name_nodes,
    names_assigned_in,
    replace_nodes,
    suggested_name,
    variable_names,
)
from ._loops import may_contain_training_step, walk_code
from ._statements import Replacement

PER_STEP_READ = "TPU241"
PER_STEP_REPORT = "TPU242"


class HostSyncs(PlansHostReads, TpuCodemod):
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
        A progress-bar update (``pbar.set_postfix(loss=loss.item())``) that runs in every step
        is flagged TPU241, not moved: TPU124, which runs right before this rule, puts it under
        an interval condition first where the loop allows it, and then it moves like any report
        at an interval.

        The rule runs after TPU102 has placed the step boundary and TPU103 the device loaders:
        where the boundary is decides which reads are mid-step. TPU115 was split (issue 26):
        ``TPU115`` still names its parts in selections, suppressions and options, TPU125 (meter
        objects keeping device values, TPU243) and TPU124 (throttled progress bars), which run
        right before it.

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
                if step % 50 == 0:
                    pbar.set_postfix(loss=loss.item())
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
    SUMMARY = "Move per-step .item() reads into step closures and device-side sums, before the sync"
    SAFETY = Safety.SEMANTIC
    # No NUMERICS: the training computes the same losses; only logged sums add in fp32.
    TRIGGERS = ("backward", ".step(", "optimizer_step", "autograd")  # reads leave training steps

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return may_contain_training_step(facts)  # the step markers of _is_step_marker

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

    def _hold(self, reads) -> None:
        """``v = X.item()`` -> ``v = X.detach()``; ``.detach().clone()`` when ``X`` may be a
        view of a tensor the rest of the step changes in place (a name, an attribute, an
        index, a view method): the report must see this moment's value."""
        node, what = reads[0]
        receiver = node.func.value if what == ".item()" else node.args[0].value
        held = detached(receiver)
        if not is_fresh_value(receiver):
            held = cst.Call(cst.Attribute(held, cst.Name("clone")))
        self.call_edits[id(node)] = held
        self.record_rewrite()

    def _read_held_values(self, statement, held: dict[str, Accumulator]) -> None:
        """A report after a sync that stays put reads a held value where it stands."""
        for name, value in held.items():
            for node in name_nodes(statement, name):
                if is_load(self.index, node):
                    self.name_edits[id(node)] = value.read()
                    self.record_rewrite()

    def _rewrite_accumulation(self, reads) -> None:
        """``v += X.item()`` -> ``v += X.detach()`` (``X`` when it counts: no gradient);
        ``v += float(X)`` -> ``v += X.detach()``."""
        for node, what in reads:
            if what == ".item()":
                receiver = node.func.value
                self.call_edits[id(node)] = (
                    receiver if counts_things(receiver) else detached(receiver)
                )
            elif what == "float(tensor)":
                self.call_edits[id(node)] = detached(node.args[0].value)
            else:  # a formatted tensor in a sum: leave it
                continue
            self.record_rewrite()

    def _convert_uses_outside(self, loop, function, accumulator: Accumulator) -> None:
        """Every read of the sum outside the loop takes its value once: ``float(total)``; so
        does a computation from it at the loop's logging interval (``_reads_at_interval``)."""
        for node in name_nodes(function, accumulator.name):
            if not is_load(self.index, node):
                continue
            if self._inside(node, loop):
                statement = self.index.statement_of(node)
                if self._is_report(statement) or not self._reads_at_interval(statement, loop):
                    continue
            self.name_edits[id(node)] = accumulator.read()
            self.record_rewrite()

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
            if any(is_load(self.index, node) for node in name_nodes(statement, name))
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
        if self._is_progress_bar(statement) and self._interval_guard(statement) is None:
            # updated in every step, it reads every step: TPU124 throttled the bars it could
            tensors = self._tensor_names(self.index.owner(loop))
            for node in walk_code(statement):
                what = self._read_kind(node, tensors)
                if what:
                    self._flag_read(node, what)
            return
        call = statement_call(statement)
        assert call is not None
        closure = self._closure_call(loop, call, accumulators)
        line = cst.SimpleStatementLine(
            [cst.Expr(closure)],
            trailing_whitespace=statement.trailing_whitespace,
            leading_lines=statement.leading_lines,
        )
        if marker is not None:
            line = with_marker_comments(line, [marker])
        self.edits.replace(statement, Replacement((line,)))
        self.require_import(XM)
        self.record_rewrite()

    def _closure_call(self, loop, call: cst.Call, accumulators) -> cst.Call:
        """``xm.add_step_closure(lambda <values>: <call>, args=(<values>,))``."""
        changing = names_assigned_in(loop)
        tensors = self._tensor_names(self.index.owner(loop))
        used = variable_names(call)
        params: dict[str, cst.BaseExpression] = {}  # parameter -> what the step passes
        replacements: dict[int, cst.BaseExpression] = {}
        for node in walk_all(call):
            if isinstance(node, cst.Call) and is_item_call(node):
                receiver = node.func.value
                if not isinstance(receiver, cst.Name):
                    name = fresh_name(suggested_name(call, node), used | set(params))
                    params[name] = receiver
                    replacements[id(receiver)] = cst.Name(name)
        for node in walk_all(call):
            if not isinstance(node, cst.Name) or id(node) in replacements:
                continue
            if any(id(a) in replacements for a in self._ancestors_within(node, call)):
                continue
            if not is_load(self.index, node) or node is call.func:
                continue
            name = node.value
            if name in accumulators:
                params.setdefault(name, cst.Name(name))
                replacements[id(node)] = accumulators[name].read()
            elif name in changing or name in tensors:
                params.setdefault(name, cst.Name(name))
        body = replace_nodes(call, replacements)
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

    def _move_sync(self, plan: LoopPlan) -> None:
        self.edits.remove(plan.sync)
        self.edits.append_to(plan.loop.body, plan.sync.with_changes(leading_lines=()))
        self.record_rewrite()
