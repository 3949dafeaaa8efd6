"""TPU127: ``.cuda()``, ``.to("cuda")`` and ``device="cuda"`` move to the XLA device."""

from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.metadata import ScopeProvider

from migrate.fastcst.facts import FileFacts
from ._base import Invalid, Safety, TpuCodemod, Valid, dotted_name, walk_all
from ._device_analysis import DeviceAnalysis
from ._device_index import holds_only_indices, is_device_index
from ._frameworks import uses_a_framework
from ._loops import ModuleIndex
from ._devices import (
    CURRENT_ACCELERATOR,
    Collector,
    Trace,
    argument,
    chain,
    is_cuda_device_text,
    keyword,
    statements,
    with_args,
)

# `.cuda(...)` arguments that only meant something for CUDA (the first positional is the GPU index).
CUDA_MOVE_KEYWORDS = frozenset({"device", "non_blocking"})
# Keywords dropped from `.to(<cuda>, ...)` together with the CUDA device.
DROPPED_MOVE_KEYWORDS = frozenset({"non_blocking"})
# torch functions whose first argument (or `device=`) is the device to use.
DEVICE_ARGUMENT_CALLS = frozenset({"torch.set_default_device"})


class DeviceMoves(DeviceAnalysis, TpuCodemod):
    """
    What it does
        Moves tensors and modules to the XLA device where the script moves them to CUDA:
        ``.cuda(...)``, ``.to("cuda"...)``, ``torch.set_default_device("cuda")`` and
        ``device="cuda"`` of torch calls become ``.to(device)`` / ``device=device``.

        - The device is the ``device`` variable where it is bound when the move runs,
          ``self.device`` in a method of a class whose ``__init__`` sets it, else
          ``torch_xla.device()``.
        - A CUDA device is any spelling of one: ``"cuda"``, ``"cuda:0"``, ``f"cuda:{rank}"``,
          ``torch.device("cuda")``, ``torch.accelerator.current_accelerator()``, or a choice
          ``"cuda" if use_cuda else "cpu"``.
        - A CUDA device given by its number moves too: ``.to(0)``, ``.to(rank)``,
          ``.to(self.gpu_id)``, ``device=local_rank``, where the value is always an index: an
          ``int`` literal, ``int(...)``, a rank call, a parameter annotated ``int``, a spawned
          worker's rank, or a name or ``self`` attribute bound only to those. The numbers
          themselves stay, for the rank checks and prints that read them.
        - ``.cuda(gpu, non_blocking=True)`` loses its GPU index and ``non_blocking``;
          ``.to("cuda", non_blocking=True)`` loses ``non_blocking`` with the CUDA device.
        - In framework code the device is the framework's: ``self.device`` in a
          ``LightningModule``'s methods, ``self.args.device`` in a ``Trainer`` subclass's,
          ``accelerator.device`` (``fabric.device``) where the script's accelerator is in
          reach. A model handed to Lightning's ``trainer.fit`` or to a Hugging Face ``Trainer``
          is not moved at all (``model = model.cuda()`` goes): the framework moves it.

        Split off from TPU101 (``TPU101`` still names it in selections, suppressions and
        options). It runs after TPU128, so that a ``device`` bound in a branch on
        availability is bound where that branch is inlined, and before TPU101, which would
        otherwise make ``.to(torch.device("cuda"))`` a move to ``torch_xla.device()``
        rather than to ``device``.

    Why
        torch_xla 2.9 has no CUDA: ``.cuda()`` and ``.to("cuda")`` fail outright on a TPU host.

    Example
        Before::

            device = torch_xla.device()
            model = Net().cuda()
            x = torch.zeros(3, device="cuda")
            batch = batch.to("cuda", non_blocking=True)

        After::

            device = torch_xla.device()
            model = Net().to(device)
            x = torch.zeros(3, device=device)
            batch = batch.to(device)

    Left alone: ``torch.cuda`` itself and ``torch.Tensor.cuda``; ``.to(device)`` and moves to
    the CPU; ``.to(n)`` where ``n`` is not always an index (a dtype passed by some caller); ``device="cuda"`` of a callee that is not torch's (a device string of the user's
    own, TPU126); a file that defines its own ``cuda`` function or method or a ``Device``
    class.
    """

    CODE = "TPU127"
    NAME = "device-moves"
    SUMMARY = "Move tensors and modules with .to(device) instead of .cuda() / .to('cuda')"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("cuda", "accelerator", ".to(")

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses("torch") and (
            facts.calls("cuda", "to")  # (``.to(rank)``: a CUDA device by its number)
            or facts.uses(CURRENT_ACCELERATOR)
            or facts.has_string(is_cuda_device_text)
        )

    VALID = [
        Valid(
            "import torch\nimport torch_xla\n\n"
            "device = torch_xla.device()\n"
            "model = Net().to(device)\n"
            "x = torch.zeros(3, device=device)\n",
            why="already migrated",
        ),
        Valid(
            "import numpy as np\n\nx = gpu_array.cuda()\ny = x.to('cuda')\n",
            why="no torch in the file: .cuda() belongs to some other library",
        ),
        Valid(
            "import torch\n\nrun(model, device='cuda')\nconfig = dict(device='cuda:0')\n",
            why="device strings given to the user's own callees are configuration (TPU126)",
        ),
    ]

    INVALID: list[Invalid] = []  # in files: cases/tpu127_device_moves/

    def __init__(self, context) -> None:
        super().__init__(context)
        self._self_device_lines: dict[int, Optional[int]] = {}
        self.index: Optional[ModuleIndex] = None  # only where a training framework is imported

    def visit_Module(self, node: cst.Module) -> bool:
        active = super().visit_Module(node)
        self.index = ModuleIndex(self, node) if active and uses_a_framework(self) else None
        return active

    def _planned_drops(self, collector: Collector) -> Trace:
        """The device choices among what the moves replace or drop: a flag they read goes with
        its last read."""
        trace = Trace()
        for call in collector.calls:
            for gone in self._replaced(call):
                trace.dropped += [
                    node
                    for node in walk_all(gone)
                    if isinstance(node, cst.IfExp) and self._device_choice(node) is not None
                ]
        return trace

    def _replaced(self, call: cst.Call) -> list[cst.CSTNode]:
        """The arguments of ``call`` that its move replaces or drops."""
        if self._cuda_target(call) is not None:
            return [arg.value for arg in self._dropped_cuda_args(call)]
        target = self._move_target(call)
        if target is None:
            return [arg.value for arg in self._cuda_device_keywords(call)]
        if not _is_to(call):
            return [target.value]
        return [target.value] + [
            arg.value for arg in call.args if keyword(arg) in DROPPED_MOVE_KEYWORDS
        ]

    # ----------------------------------------------------------------- what moves
    def _cuda_target(self, call: cst.Call) -> Optional[cst.Attribute]:
        """The ``x.cuda`` of a ``x.cuda(...)`` that moves ``x``."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "cuda"):
            return None
        if isinstance(func.value, (cst.Name, cst.Attribute)) and self._is_torch(func.value):
            return None  # torch.cuda itself, torch.Tensor.cuda(...), not a tensor method
        return func

    def _dropped_cuda_args(self, call: cst.Call) -> list[cst.Arg]:
        """The arguments of ``x.cuda(gpu, non_blocking=True)`` that only meant CUDA."""
        return [
            arg
            for index, arg in enumerate(call.args)
            if (index == 0 and arg.keyword is None and not arg.star)
            or (arg.keyword is not None and arg.keyword.value in CUDA_MOVE_KEYWORDS)
        ]

    def _move_target(self, call: cst.Call) -> Optional[cst.Arg]:
        """The CUDA device argument of ``x.to("cuda")`` or ``torch.set_default_device("cuda")``."""
        if not (_is_to(call) or self.is_name(call.func, *DEVICE_ARGUMENT_CALLS)):
            return None
        target = argument(call, 0, "device")
        if target is None or not self._cuda_device_or_index(target.value):
            return None
        return target

    def _cuda_device_keywords(self, call: cst.Call) -> list[cst.Arg]:
        """The ``device="cuda"`` arguments of a torch callee."""
        if not self._torch_callee(call.func):
            return []
        return [
            arg
            for arg in call.args
            if keyword(arg) == "device" and self._cuda_device_or_index(arg.value)
        ]

    def _cuda_device_or_index(self, node: cst.CSTNode) -> bool:
        """``node`` names a CUDA device, by name or by number (``0``, ``rank``, ``self.gpu_id``:
        ``_device_index``)."""
        return self._cuda_device(node) or is_device_index(self, node)

    # ----------------------------------------------------------------- rewrites
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if not self._active:
            return updated_node
        cuda_method = self._cuda_target(original_node) is not None
        target = None if cuda_method else self._move_target(original_node)
        if (cuda_method or target is not None) and self._framework_moves(original_node):
            return self._drop_move(original_node, updated_node)
        if cuda_method:
            return self._cuda_method(original_node, updated_node)
        if target is not None:
            return self._move(original_node, updated_node, target)
        moved = {id(arg) for arg in self._cuda_device_keywords(original_node)}
        if not moved:
            return updated_node
        self.record_rewrite()
        device = self._device_for(original_node)
        return updated_node.with_changes(
            args=[
                new.with_changes(value=device) if id(old) in moved else new
                for old, new in zip(original_node.args, updated_node.args)
            ]
        )

    def _cuda_method(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """``x.cuda(gpu, non_blocking=True)`` -> ``x.to(device)``."""
        dropped = {id(arg) for arg in self._dropped_cuda_args(original)}
        kept = [new for old, new in zip(original.args, updated.args) if id(old) not in dropped]
        device = cst.Arg(self._device_for(original))
        self.record_rewrite()
        return with_args(
            updated.with_changes(func=updated.func.with_changes(attr=cst.Name("to"))),
            [device, *kept],
        )

    def _move(self, original: cst.Call, updated: cst.Call, target: cst.Arg) -> cst.Call:
        """``x.to("cuda", non_blocking=True)`` -> ``x.to(device)``, other arguments kept;
        ``torch.set_default_device("cuda")`` -> ``torch.set_default_device(device)``."""
        device = self._device_for(original)
        self.record_rewrite()
        if not _is_to(original):
            return updated.with_changes(
                args=[
                    new.with_changes(value=device) if old is target else new
                    for old, new in zip(original.args, updated.args)
                ]
            )
        args = []
        for old, new in zip(original.args, updated.args):
            if old is target:
                args.append(new.with_changes(value=device))
            elif keyword(old) not in DROPPED_MOVE_KEYWORDS:
                args.append(new)
        return with_args(updated, args)

    # ----------------------------------------------------------------- framework objects
    def _framework_moves(self, move: cst.Call) -> bool:
        """``move`` (``x.cuda()``, ``x.to("cuda")``) moves an object a framework puts on the
        device itself (the model a ``Trainer`` or ``trainer.fit`` takes), where no device of
        the framework's is at hand to move it to."""
        if self.index is None or not isinstance(move.func, cst.Attribute):
            return False
        frameworks = self.index.frameworks
        if frameworks.device_for(move) is not None:
            return False
        return bool(frameworks.manages(move.func.value) or frameworks.manages_value(move))

    def _drop_move(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """``Net().cuda()`` -> ``Net()``; ``model = model.cuda()`` goes whole."""
        self.record_rewrite()
        moved = updated.func.value  # type: ignore[attr-defined]
        assign = self.index.parent(original)
        line = self.index.parent(assign)
        if (
            isinstance(assign, cst.Assign)
            and isinstance(line, cst.SimpleStatementLine)
            and len(line.body) == 1
            and [dotted_name(t.target) for t in assign.targets]
            == [dotted_name(original.func.value)]  # type: ignore[attr-defined]
        ):
            self.edits.remove(line)
        return moved

    # ----------------------------------------------------------------- the device
    def _device_for(self, node: cst.CSTNode) -> cst.BaseExpression:
        """How code at ``node`` names the XLA device: the framework's device in framework code
        (``self.device`` in a LightningModule, ``accelerator.device``), ``device`` once bound
        there, ``self.device`` in a method of a class whose ``__init__`` set it, else
        ``torch_xla.device()``."""
        framework_device = self.index.frameworks.device_for(node) if self.index else None
        if framework_device is not None:
            return framework_device
        if self._device_bound_before(node):
            return self.device_expression(node)
        if self._self_device_visible(node):
            return cst.parse_expression("self.device")
        return self._xla_device()

    def _device_bound_before(self, node: cst.CSTNode) -> bool:
        """``device`` (the base class policy) only when it is bound when ``node`` runs: a
        parameter, an enclosing scope's name, or an earlier assignment that reaches ``node``."""
        try:
            scope = self.get_metadata(ScopeProvider, node)
        except KeyError:
            return False
        if scope is None or "device" not in scope or holds_only_indices(self, scope, "device"):
            return False
        for assignment in scope["device"]:
            if getattr(assignment, "scope", scope) is not scope:
                return True
            binding = getattr(assignment, "node", None)
            if (
                binding is not None
                and self.position(binding) < self.position(node)
                and self._reaches(binding, node)
            ):
                return True
        return False

    def _reaches(self, binding: cst.CSTNode, node: cst.CSTNode) -> bool:
        """An earlier binding reaches ``node`` unless it sits in an if-branch that ``node`` is
        not in and whose chain does not bind ``device`` in every arm."""
        around_node = set(map(id, self._ancestors(node)))
        current = binding
        for parent in self._ancestors(binding):
            if id(current) in around_node:
                return True
            if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Module)):
                return True
            branch = isinstance(parent, cst.If) or (
                isinstance(parent, cst.Else) and isinstance(self._parent(parent), cst.If)
            )
            if branch and current is parent.body:
                head = self._chain_head(parent)
                if head is None or not self._every_arm_binds(head):
                    return False
            current = parent
        return True

    def _ancestors(self, node: cst.CSTNode) -> list:
        ancestors, current = [], self._parent(node)
        while current is not None:
            ancestors.append(current)
            current = self._parent(current)
        return ancestors

    def _chain_head(self, arm: cst.CSTNode) -> Optional[cst.If]:
        while arm is not None and not (isinstance(arm, cst.If) and not self._is_elif(arm)):
            arm = self._parent(arm)
        return arm

    def _every_arm_binds(self, head: cst.If) -> bool:
        """Every arm of the chain, ``else`` included, assigns ``device`` at its top level."""
        arms, else_ = chain(head)
        if else_ is None:
            return False
        return all(
            any(
                isinstance(small, cst.Assign)
                and any(dotted_name(t.target) == "device" for t in small.targets)
                for statement in statements(arm.body)
                if isinstance(statement, cst.SimpleStatementLine)
                for small in statement.body
            )
            for arm in [*arms, else_]
        )

    def _self_device_visible(self, node: cst.CSTNode) -> bool:
        function, klass = self._enclosing_method(node)
        if function is None or klass is None:
            return False
        if id(klass) not in self._self_device_lines:
            self._self_device_lines[id(klass)] = self._init_sets_self_device(klass)
        line = self._self_device_lines[id(klass)]
        if line is None:
            return False
        return function.name.value != "__init__" or line < self.position(node)[0]

    def _enclosing_method(self, node: cst.CSTNode):
        """The method (first parameter ``self``) and class ``node`` is in, else (None, None)."""
        function = None
        for ancestor in self._ancestors(node):
            if isinstance(ancestor, cst.FunctionDef) and function is None:
                params = ancestor.params.params
                if not params or params[0].name.value != "self":
                    return None, None
                function = ancestor
            elif isinstance(ancestor, cst.ClassDef):
                return function, ancestor
        return None, None

    def _init_sets_self_device(self, klass: cst.ClassDef) -> Optional[int]:
        """Line of the first ``self.device = ...`` in ``klass.__init__``, if any."""
        for statement in klass.body.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__":
                for node in walk_all(statement.body):
                    if isinstance(node, cst.AssignTarget) and dotted_name(node.target) == (
                        "self.device"
                    ):
                        return self.position(node)[0]
        return None


def _is_to(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"
