"""TPU126: "cuda" device strings in a script's configuration become "xla"."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import Invalid, Safety, TpuCodemod, Valid
from ._device_analysis import DeviceAnalysis
from ._devices import (
    CUDA_DEVICE,
    cuda_literal,
    is_config_name,
    is_cuda_device_text,
    keyword,
    mentions_device,
    string_value,
    target_name,
)


class DeviceStrings(DeviceAnalysis, TpuCodemod):
    """
    What it does
        Makes the device strings of a script's configuration say "xla" where they say "cuda",
        in the user's quote style:

        - values of variables, attributes, dict keys, parameters and keyword arguments of the
          user's own functions whose name contains "device" (``device = "cuda"``,
          ``def train(device="cuda:0")``, ``{"device": "cuda"}``);
        - the default and the choices of an argparse ``--device`` option;
        - the "cuda" strings such names are compared with (``args.device == "cuda"``,
          ``device.type in ("cuda", "mps")``, ``args.device.startswith("cuda")``);
        - the CUDA arm of a choice that follows such a string: ``device_type = "cuda" if
          "cuda" in device else "cpu"`` becomes ``"xla" if "xla" in device else "cpu"``, so
          ``--device=cpu`` still runs on the CPU.

        Split off from TPU101 (``TPU101`` still names it in selections, suppressions and
        options). It runs last of TPU101's parts: a variable TPU101 made a device
        (``device = torch_xla.device()``) is compared through its ``.type`` already, and a
        device TPU101 chose in a configured choice's arm is ``torch_xla.device()`` already.

    Why
        The configured device string reaches ``torch.device(...)`` and ``.to(...)`` at run
        time: "cuda" fails on a TPU host, "xla" is the XLA device.

    Example
        Before::

            parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
            args = parser.parse_args()
            device_type = "cuda" if "cuda" in args.device else "cpu"

        After::

            parser.add_argument("--device", default="xla", choices=["xla", "cpu"])
            args = parser.parse_args()
            device_type = "xla" if "xla" in args.device else "cpu"

    Left alone: "cuda" in messages, docstrings and values of names that do not say "device"
    (``device_map`` neither: accelerate's placement map); a ``--cuda`` flag; ``device="cuda"``
    of torch calls (TPU127); comparisons that decide an optimizer option XLA lacks, which keep
    asking about CUDA (TPU129); a file that defines its own ``cuda`` function or method or a
    ``Device`` class.
    """

    CODE = "TPU126"
    NAME = "device-strings"
    SUMMARY = 'Configured device strings and the comparisons with them say "xla" for "cuda"'
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("cuda",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses("torch") and facts.has_string(is_cuda_device_text)

    VALID = [
        Valid(
            "import torch\n\n"
            "device = 'xla'\n"
            "device_type = 'xla' if 'xla' in device else 'cpu'\n"
            "dev = torch.device('cpu' if args.device == 'cpu' else 'xla')\n",
            why="device-type derivations that already follow the XLA device string",
        ),
        Valid(
            "import torch\n\nx = torch.zeros(3, device='cuda')\ny = x.to('cuda:0')\n",
            why="devices of torch calls and moves are TPU127's",
        ),
    ]

    INVALID: list[Invalid] = []  # in files: cases/tpu126_device_strings/

    # ----------------------------------------------------------------- calls
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if not self._active:
            return updated_node
        for rewrite in (self._device_option, self._device_startswith, self._device_keywords):
            result = rewrite(original_node, updated_node)
            if result is not updated_node:
                return result
        return updated_node

    def _device_option(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """argparse ``--device`` options: a CUDA default and CUDA choices become "xla"."""
        func = original.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "add_argument"):
            return updated
        names = [string_value(arg.value) or "" for arg in original.args if arg.keyword is None]
        names += [string_value(arg.value) or "" for arg in original.args if keyword(arg) == "dest"]
        if not any(is_config_name(name) for name in names):
            return updated
        args, changed = [], False
        for old, new in zip(original.args, updated.args):
            literal = cuda_literal(old.value)
            if keyword(old) == "default" and literal is not None:
                new, changed = new.with_changes(value=self._xla_string(literal)), True
            elif keyword(old) == "choices" and isinstance(
                old.value, (cst.List, cst.Tuple, cst.Set)
            ):
                choices = self._xla_choices(new.value)
                changed = changed or choices is not new.value
                new = new.with_changes(value=choices)
            args.append(new)
        if not changed:
            return updated
        self.record_rewrite()
        return updated.with_changes(args=args)

    def _xla_choices(self, collection):
        """CUDA strings in a choices list become one "xla" entry."""
        has_xla = any(string_value(element.value) == "xla" for element in collection.elements)
        elements, changed = [], False
        for element in collection.elements:
            value = element.value
            if isinstance(value, cst.SimpleString) and cuda_literal(value) is not None:
                changed = True
                if has_xla:
                    continue
                element, has_xla = element.with_changes(value=self._xla_string(value)), True
            elements.append(element)
        if not changed:
            return collection
        elements[-1] = elements[-1].with_changes(comma=collection.elements[-1].comma)
        return collection.with_changes(elements=elements)

    def _device_startswith(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """``args.device.startswith("cuda")`` -> ``...startswith("xla")``."""
        if not self._startswith_cuda(original) or self._retyped(original.func.value):
            return updated  # (a device now: TPU101 asks for its `.type`)
        self.record_rewrite()
        xla = self._xla_string(original.args[0].value)
        return updated.with_changes(args=[updated.args[0].with_changes(value=xla)])

    def _device_keywords(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """``device="cuda"`` of the user's own callee -> ``device="xla"`` (of a torch callee
        it is a device: TPU127)."""
        if not any(_cuda_keyword(arg) for arg in original.args):
            return updated  # (asked first: what the callee is costs more)
        if self._torch_callee(original.func):
            return updated
        self.record_rewrite()
        return updated.with_changes(
            args=[
                (
                    new.with_changes(value=self._xla_string(cuda_literal(old.value)))
                    if _cuda_keyword(old)
                    else new
                )
                for old, new in zip(original.args, updated.args)
            ]
        )

    # ----------------------------------------------------------------- configured choices
    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        """``"cuda" if "cuda" in device else "cpu"`` -> ``"xla" if "xla" in device else "cpu"``
        (the comparison is rewritten on its own; a ``torch.device("cuda")`` arm is
        ``torch_xla.device()`` already)."""
        if not self._active:
            return updated_node
        arm = self._configured_choice(original_node)
        literal = cuda_literal(arm)
        if literal is None:
            return updated_node
        field = "body" if arm is original_node.body else "orelse"
        old = getattr(updated_node, field)
        self.record_rewrite()
        xla = self._xla_string(literal).with_changes(lpar=old.lpar, rpar=old.rpar)
        return updated_node.with_changes(**{field: xla})

    # ----------------------------------------------------------------- configuration values
    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        names = [target_name(target.target) for target in original_node.targets]
        return self._config_value(names, original_node.value, updated_node, "value")

    def leave_AnnAssign(
        self, original_node: cst.AnnAssign, updated_node: cst.AnnAssign
    ) -> cst.AnnAssign:
        names = [target_name(original_node.target)]
        return self._config_value(names, original_node.value, updated_node, "value")

    def leave_DictElement(
        self, original_node: cst.DictElement, updated_node: cst.DictElement
    ) -> cst.DictElement:
        names = [string_value(original_node.key)]
        return self._config_value(names, original_node.value, updated_node, "value")

    def leave_Param(self, original_node: cst.Param, updated_node: cst.Param) -> cst.Param:
        names = [original_node.name.value]
        return self._config_value(names, original_node.default, updated_node, "default")

    def _config_value(self, names, value, updated_node, attribute: str):
        """``device = "cuda"`` (any name containing "device") -> ``device = "xla"``."""
        if not self._active or value is None:
            return updated_node
        literal = cuda_literal(value)
        if literal is None or not any(is_config_name(name or "") for name in names):
            return updated_node
        self.record_rewrite()
        return updated_node.with_changes(**{attribute: self._xla_string(literal)})

    def leave_Comparison(
        self, original_node: cst.Comparison, updated_node: cst.Comparison
    ) -> cst.Comparison:
        """``args.device == "cuda"``, ``"cuda" in device``, ``device.type in ("cuda", ...)``
        compare with "xla" so the accelerator path is taken."""
        if not self._active or self._in_kernel_decision(original_node):
            return updated_node  # a fused decision keeps asking about CUDA
        operands = [original_node.left] + [t.comparator for t in original_node.comparisons]
        if any(map(self._retyped, operands)):
            return updated_node  # a device now: TPU101 compares its `.type`
        new_operands = [updated_node.left] + [t.comparator for t in updated_node.comparisons]
        changed = False
        for index, target in enumerate(original_node.comparisons):
            if not isinstance(target.operator, (cst.Equal, cst.NotEqual, cst.In, cst.NotIn)):
                continue
            for mine, other in ((index, index + 1), (index + 1, index)):
                if not mentions_device(operands[other]):
                    continue
                replaced = self._xla_compared(operands[mine], new_operands[mine])
                if replaced is not None:
                    new_operands[mine], changed = replaced, True
        if not changed:
            return updated_node
        self.record_rewrite()
        return updated_node.with_changes(
            left=new_operands[0],
            comparisons=[
                target.with_changes(comparator=operand)
                for target, operand in zip(updated_node.comparisons, new_operands[1:])
            ],
        )

    def _xla_compared(self, original, updated):
        """The string "cuda"/"cuda:0" -> "xla"/"xla:0"; in a tuple/list/set, each such one."""
        if isinstance(original, cst.SimpleString):
            value = string_value(original)
            if value is None or CUDA_DEVICE.fullmatch(value) is None:
                return None
            xla = self._xla_string(original)
            return xla.with_changes(value=xla.value.replace("xla", "xla" + value[4:]))
        if isinstance(original, (cst.Tuple, cst.List, cst.Set)):
            elements, changed = [], False
            for old, new in zip(original.elements, updated.elements):
                replaced = self._xla_compared(old.value, new.value)
                if replaced is not None:
                    new, changed = new.with_changes(value=replaced), True
                elements.append(new)
            return updated.with_changes(elements=elements) if changed else None
        return None


def _cuda_keyword(arg: cst.Arg) -> bool:
    """A keyword named for a device (``device=``, ``eval_device=``) given a CUDA string."""
    return is_config_name(keyword(arg) or "") and cuda_literal(arg.value) is not None
