"""TPU125: report the meter objects a training step hands device values to (TPU243)."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import FindingDoc, Invalid, Safety, TpuCodemod, Valid, code_of
from ._host_reads import PlansHostReads, has_item
from ._loops import ModuleIndex, may_contain_training_step, walk_code
from ._meters import from_device, kept_values, step_values

KEPT_DEVICE_VALUE = "TPU243"


class MeterValues(PlansHostReads, TpuCodemod):
    """
    What it does
        Reports (TPU243) a call in a training step that hands a device value to an object of a
        class of this file which keeps it in attributes and formats them
        (``top1.update(acc1[0], n)`` on an ``AverageMeter``), naming the attributes: each one
        shown is a copy of its own whenever the object is printed. Nothing is rewritten.

        Split off from TPU115 (``TPU115`` still names it in selections and suppressions); it
        runs right before TPU124 and TPU115, on the step as the user wrote it.

    Why
        The step reads nothing, so no rule sees a host sync there, but the object keeps device
        values and every display copies each one from the device on its own: two meters showing
        ``val`` and ``avg`` cost four round trips per display. The class may be used elsewhere
        with what it keeps, so the rule does not change it.

    Example
        Before::

            for images, target in loader:
                output = model(images)
                loss = criterion(output, target)
                losses.update(loss, images.size(0))

        After::

            for images, target in loader:
                output = model(images)
                loss = criterion(output, target)
                # TODO(tpu-migrate): TPU243 losses (AverageMeter) keeps the device value loss ...
                losses.update(loss, images.size(0))
    """

    CODE = "TPU125"
    NAME = "meter-device-values"
    SUMMARY = "Report meter objects (AverageMeter) that keep device values the step hands them"
    SAFETY = Safety.MANUAL
    TRIGGERS = ("backward", ".step(", "optimizer_step", "autograd")  # values kept in a step

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return may_contain_training_step(facts)

    FINDINGS = {
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
    }

    VALID: list[Valid] = []
    INVALID: list[Invalid] = []

    def visit_Module(self, node: cst.Module) -> bool:
        self.index = ModuleIndex(self, node)
        loops = self._training_loops()
        self.training_loop_ids = {id(loop) for loop in loops}
        for loop in loops:
            self._flag_kept_device_values(loop)
        return True

    def _flag_kept_device_values(self, loop) -> None:
        """Calls in the step that hand a device value to an object that keeps and shows it."""
        device_names = step_values(loop, self._tensor_names(self.index.owner(loop)))

        def is_device_value(value: cst.BaseExpression) -> bool:
            return not has_item(value) and from_device(value, device_names)

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
