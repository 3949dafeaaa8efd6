"""TPU124: progress bars updated in every training step are updated at an interval instead."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import Invalid, Safety, TpuCodemod, Valid, code_of
from ._host_reads import (
    LOG_EVERY,
    PROGRESS_BAR_METHODS,
    LoopPlan,
    PlansHostReads,
    fresh_name,
    variable_names,
)
from ._loops import may_contain_training_step, new_statement
from ._statements import Replacement


class ProgressBars(PlansHostReads, TpuCodemod):
    """
    What it does
        In a training loop whose step ends at a known boundary (it iterates a
        ``pl.MpDeviceLoader``, or its body calls ``torch_xla.sync()``), a progress-bar update
        that reads the device in every step (``pbar.set_postfix(loss=loss.item())``,
        ``set_description(...)``, the ``_str`` forms) is put under an interval condition: it
        joins the loop's own interval block (``if step % log_interval == 0:``) when that block
        follows it, reuses the block's condition otherwise, and gets ``if step % LOG_EVERY ==
        0:`` when the loop has none, with the loop index (the loop is wrapped in ``enumerate``
        when it has none) and a module constant ``LOG_EVERY`` (option ``log_every``, default
        10). Only the updates TPU115 moves out of the step are throttled: not those after a
        sync that must stay where it is, and not in loops without a step count (a ``while``
        loop with no interval block), where TPU115 reports them (TPU241).

        Split off from TPU115 (``TPU115`` still names it in selections, suppressions and
        options: ``[tool.tpu-migrate.options.TPU115] log_every`` reaches this rule). It runs
        right before TPU115, which then moves the update's read into a step closure, as for
        any report at an interval.

    Why
        A progress bar shows a number from the device: each update is a device->host copy, and
        in the middle of a step it cuts the step's graph in two. In a step closure the copy
        still happens on every step; at an interval the bar costs one copy per interval, and a
        human cannot read a number that changes 100 times a second anyway.

    Example
        Before::

            for x, y in pbar:
                loss = criterion(model(x), y)
                loss.backward()
                xm.optimizer_step(optimizer)
                pbar.set_postfix(loss=loss.item())
                torch_xla.sync()

        After::

            LOG_EVERY = 10  # steps between progress-bar updates (each one reads the device)

            for step, (x, y) in enumerate(pbar):
                loss = criterion(model(x), y)
                loss.backward()
                xm.optimizer_step(optimizer)
                if step % LOG_EVERY == 0:
                    pbar.set_postfix(loss=loss.item())
                torch_xla.sync()
    """

    CODE = "TPU124"
    NAME = "throttled-progress-bars"
    SUMMARY = "Progress bars updated in every training step are updated every LOG_EVERY steps"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("set_postfix", "set_description")
    OPTIONS = {"log_every": 10}
    THROTTLES_PROGRESS_BARS = True

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return may_contain_training_step(facts) and facts.calls(*PROGRESS_BAR_METHODS)

    VALID: list[Valid] = []
    INVALID: list[Invalid] = []

    def __init__(self, context) -> None:
        super().__init__(context)
        self.loop_edits: dict[int, cst.BaseAssignTargetExpression] = {}  # id(For) -> new target
        self.needs_log_every = False

    def _planned(self, module: cst.Module) -> None:
        bound = any(
            isinstance(b.target, cst.Name) and b.target.value == LOG_EVERY and b.owner is module
            for b in self.index.all_bindings
        )
        if self.needs_log_every and not bound:
            self._add_log_every_constant(module)

    def _move_into_closure(self, plan: LoopPlan, statement, accumulators, marker=None) -> None:
        if self._is_progress_bar(statement) and self._interval_guard(statement) is None:
            if self._throttle(plan.loop, statement):
                self.record_rewrite()

    def _throttle(self, loop, statement) -> bool:
        """Put ``statement`` (a progress-bar update) under an interval condition: into the loop's
        own interval block when that block follows it directly, else under a new ``if``. False
        when the loop offers no step count."""
        line = statement.with_changes(leading_lines=())
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
        taken = variable_names(function)
        name = fresh_name("step", taken)
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

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        if id(original_node) not in self.loop_edits:
            return updated_node
        return updated_node.with_changes(
            target=self.loop_edits[id(original_node)],
            iter=cst.Call(cst.Name("enumerate"), [cst.Arg(updated_node.iter)]),
        )
