"""TPU101: the device a script chooses becomes the XLA device."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import TORCH_XLA, Invalid, Safety, TpuCodemod, Valid
from ._device_analysis import DeviceAnalysis
from ._devices import (
    CUDA_DEVICE,
    CURRENT_ACCELERATOR,
    TORCH_DEVICE,
    Collector,
    Trace,
    argument,
    cuda_literal,
    is_cuda_device_text,
    keyword,
    string_value,
)

# torch functions whose first argument (or `device_type=`) must be a device type string.
DEVICE_TYPE_CALLS = frozenset({"torch.autocast", "torch.amp.autocast"})


class DevicePlacement(DeviceAnalysis, TpuCodemod):
    """
    What it does
        Makes the device a script chooses the XLA device.

        - ``torch.device("cuda"...)``, ``torch.accelerator.current_accelerator()`` and
          ``"cuda" if torch.cuda.is_available() else "cpu"`` become ``torch_xla.device()``
          (``current_accelerator().type`` becomes ``"xla"``; a choice assigned to a
          ``*type*`` name or given as a ``default=`` becomes ``"xla"``).
        - A choice that is also the user's keeps its test without the availability part:
          ``"cuda" if args.cuda else "cpu"`` becomes ``torch_xla.device() if args.cuda else
          torch.device("cpu")``: ``--no-cuda`` still trains on the CPU.
        - A variable that held ``"cuda" if ... else "cpu"`` now holds a device, so
          ``device == "cuda"`` becomes ``device.type == "xla"`` and
          ``torch.autocast(device_type=device)`` gets ``device.type``.
        - An ``if`` whose arms now choose the same device keeps one arm
          (``if args.gpu: device = torch.device(f"cuda:{args.gpu}") else: device =
          torch.device("cuda")``), and an availability flag that only a choice still read
          goes with it.

        TPU101 was split into one rule per idea, and its code still names all of them in
        selections, suppressions and options: TPU129 (fused optimizers), TPU128
        (availability branches), TPU127 (device moves), TPU101 (this one) and TPU126 (device
        strings in configuration), which run in that order.

    Why
        torch_xla 2.9 has no CUDA, and ``torch.cuda.is_available()`` and
        ``torch.accelerator.is_available()`` are False on a TPU host: a script that picks its
        device from them silently trains on the CPU, and ``torch.device("cuda")`` fails.

    Example
        Before::

            device = torch.device("cuda" if args.cuda else "cpu")
            dev = "cuda" if torch.cuda.is_available() else "cpu"
            if dev == "cuda":
                torch.backends.cudnn.benchmark = True

        After::

            device = torch_xla.device() if args.cuda else torch.device("cpu")
            dev = torch_xla.device()
            if dev.type == "xla":
                torch.backends.cudnn.benchmark = True

    Left alone: ``torch.device("cpu")``; a choice that follows the configured device string
    (``"cuda" if "cuda" in device else "cpu"``, TPU126); tests that decide an optimizer
    option XLA lacks, which keep asking about CUDA (``fused=device.type == "cuda"``, TPU129);
    a file that defines its own ``cuda`` function or method or a ``Device`` class (its device
    handling is the user's own).
    """

    CODE = "TPU101"
    NAME = "device-placement"
    SUMMARY = "Choose the XLA device where a script chooses CUDA, an accelerator or the CPU"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("cuda", "accelerator")

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses("torch") and (
            facts.uses("torch.accelerator") or facts.has_string(is_cuda_device_text)
        )

    VALID = [
        Valid(
            "import torch\n\n"
            "if torch.backends.mps.is_available():\n"
            '    device = torch.device("mps")\n'
            "x = torch.ones(2).to(torch.float16)\n",
            why="mps-only selection and dtype moves are not CUDA",
        ),
        Valid(
            "import torch\n\n"
            "device_type = 'cuda' if 'cuda' in device else 'cpu'\n"
            "x = x.cuda()\n"
            "if torch.cuda.is_available():\n"
            "    torch.backends.cudnn.benchmark = True\n",
            why="a choice that follows the configured string (TPU126), a move (TPU127) and a "
            "branch on availability (TPU128) are the other parts'",
        ),
    ]

    INVALID: list[Invalid] = []  # in files: cases/tpu101_device_placement/

    def __init__(self, context) -> None:
        super().__init__(context)
        self._kept_choices: set[int] = set()  # ids of device choices whose test stays

    def _planned_drops(self, collector: Collector) -> Trace:
        return Trace(dropped=self._device_choices(collector))

    # ----------------------------------------------------------------- calls
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if not self._active:
            return updated_node
        if (
            self.is_name(original_node.func, TORCH_DEVICE)
            and len(original_node.args) == 1
            and id(original_node.args[0].value) in self._kept_choices
        ):
            choice = updated_node.args[0].value
            return choice.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)
        if self.is_name(original_node.func, CURRENT_ACCELERATOR) or (
            self.is_name(original_node.func, TORCH_DEVICE) and self._cuda_device(original_node)
        ):
            self.record_rewrite()
            self._release_calls(original_node)
            return self._xla_device().with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)
        updated = self._device_type_argument(original_node, updated_node)
        if updated is not updated_node:
            return updated
        return self._device_startswith(original_node, updated_node)

    def _device_type_argument(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """``torch.autocast(device_type=device)`` where ``device`` now holds a device: its
        ``.type`` (autocast wants the string)."""
        if self.is_name(original.func, *DEVICE_TYPE_CALLS):
            target = argument(original, 0, "device_type")
        else:
            target = next((arg for arg in original.args if keyword(arg) == "device_type"), None)
        if target is None or not self._retyped(target.value):
            return updated
        self.record_rewrite()
        return updated.with_changes(
            args=[
                (
                    new.with_changes(value=cst.Attribute(new.value, cst.Name("type")))
                    if old is target
                    else new
                )
                for old, new in zip(original.args, updated.args)
            ]
        )

    def _device_startswith(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """``device.startswith("cuda")`` where ``device`` now holds a device:
        ``device.type == "xla"``."""
        if not self._startswith_cuda(original) or not self._retyped(original.func.value):
            return updated
        self.record_rewrite()
        xla = self._xla_string(original.args[0].value)
        comparison = _type_comparison(updated.func.value, cst.Equal(), xla)
        return comparison.with_changes(lpar=updated.lpar, rpar=updated.rpar)

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        """``torch.accelerator.current_accelerator().type`` -> ``"xla"``."""
        value = original_node.value
        if (
            self._active
            and original_node.attr.value == "type"
            and isinstance(value, cst.Call)
            and self.is_name(value.func, CURRENT_ACCELERATOR)
        ):
            self.record_rewrite()
            self.require_import(TORCH_XLA)
            return cst.SimpleString('"xla"')
        return updated_node

    # ----------------------------------------------------------------- choices
    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        if not self._active:
            return updated_node
        cuda_arm = self._device_choice(original_node)
        if cuda_arm is None:
            return updated_node
        self.record_rewrite()
        kept = self._kept_choice(original_node, updated_node, cuda_arm)
        if kept is not None:
            return kept
        self._release_calls(original_node)
        if self._wants_device_string(original_node):
            return self._xla_string(cuda_literal(cuda_arm))
        return self._xla_device()

    def _kept_choice(self, original: cst.IfExp, updated: cst.IfExp, cuda_arm) -> cst.IfExp | None:
        """``"cuda" if args.cuda else "cpu"`` -> ``torch_xla.device() if args.cuda else
        torch.device("cpu")``: a test that still depends on the user's configuration once the
        availability tests in it are folded keeps choosing (``--no-cuda`` stays on the CPU).
        None when the test is only about the machine."""
        trace = Trace()
        verdict = self._evaluate(original.test, updated.test, trace)
        if isinstance(verdict, bool):
            return None
        test = updated.test if verdict is None else verdict
        for gone in [*trace.folded, *trace.dropped]:
            self._release_calls(gone)
        self._kept_choices.add(id(original))
        fallback = original.orelse if cuda_arm is original.body else original.body
        if self._wants_device_string(original):
            xla: cst.BaseExpression = self._xla_string(cuda_literal(cuda_arm))
            cpu: cst.BaseExpression = fallback
        else:
            xla = self._xla_device()
            cpu = _as_torch_device(fallback)
        body, orelse = (xla, cpu) if cuda_arm is original.body else (cpu, xla)
        return updated.with_changes(
            test=test,
            body=body.with_changes(lpar=updated.body.lpar, rpar=updated.body.rpar),
            orelse=orelse.with_changes(lpar=updated.orelse.lpar, rpar=updated.orelse.rpar),
        )

    # ----------------------------------------------------------------- strings now devices
    def leave_Comparison(
        self, original_node: cst.Comparison, updated_node: cst.Comparison
    ) -> cst.Comparison:
        """``device == "cuda"`` where ``device`` now holds a device: ``device.type == "xla"``,
        or ``device.type == "cuda"`` where it decides an option XLA lacks (False on XLA)."""
        if not self._active:
            return updated_node
        keep_cuda = self._in_kernel_decision(original_node)
        retyped = self._retyped_comparison(original_node, updated_node, keep_cuda)
        if retyped is None:
            return updated_node
        self.record_rewrite()
        return retyped

    def _retyped_comparison(
        self, original: cst.Comparison, updated: cst.Comparison, keep_cuda: bool = False
    ) -> Optional[cst.Comparison]:
        """``device == "cuda"`` / ``"cuda" in device`` where ``device`` now holds
        ``torch_xla.device()``: ``device.type == "xla"`` (``== "cuda"`` with ``keep_cuda``)."""
        if len(original.comparisons) != 1:
            return None
        operator = original.comparisons[0].operator
        left, right = original.left, original.comparisons[0].comparator
        new_left, new_right = updated.left, updated.comparisons[0].comparator

        def string(literal):
            return literal if keep_cuda else self._xla_string(literal)

        if isinstance(operator, (cst.Equal, cst.NotEqual)):
            if self._retyped(left) and _cuda_string(right):
                return _type_comparison(new_left, operator, string(new_right))
            if self._retyped(right) and _cuda_string(left):
                return _type_comparison(new_right, operator, string(new_left))
        if isinstance(operator, (cst.In, cst.NotIn)) and self._retyped(right):
            if _cuda_string(left):
                equal = cst.Equal() if isinstance(operator, cst.In) else cst.NotEqual()
                return _type_comparison(new_right, equal, string(new_left))
        return None


def _cuda_string(node: cst.CSTNode) -> bool:
    """A plain "cuda"/"cuda:N" string literal."""
    return CUDA_DEVICE.fullmatch(string_value(node) or "") is not None


def _type_comparison(device, operator, xla: cst.SimpleString) -> cst.Comparison:
    """``<device>.type == "xla"`` (or ``!=``)."""
    return cst.Comparison(
        left=cst.Attribute(device, cst.Name("type")),
        comparisons=[cst.ComparisonTarget(operator, xla)],
    )


def _as_torch_device(fallback: cst.BaseExpression) -> cst.BaseExpression:
    """The CPU arm of a kept choice as a device: ``"cpu"`` -> ``torch.device("cpu")``."""
    if isinstance(fallback, cst.SimpleString):
        return cst.Call(
            func=cst.Attribute(value=cst.Name("torch"), attr=cst.Name("device")),
            args=[cst.Arg(fallback.with_changes(lpar=[], rpar=[]))],
        )
    return fallback
