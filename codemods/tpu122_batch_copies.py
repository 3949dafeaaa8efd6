"""TPU122: drop the per-batch ``.to(device)`` copies in loops over ``pl.MpDeviceLoader``."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import Invalid, Safety, TpuCodemod, Valid, code_of
from ._copies import COMPREHENSIONS, CollapsesRemovedCopies
from ._loops import (
    DATA_LOADERS,
    MP_DEVICE_LOADERS,
    ModuleIndex,
    assigned_pairs,
    calls_in,
    device_loader_device,
    in_generator,
    names_in_target,
    positional_arguments,
)

# ``.to(...)`` keywords a pure device move may carry; anything else (dtype, copy, ...) keeps it.
MOVE_KEYWORDS = frozenset({"device", "non_blocking"})
# Tensor methods whose result lives on the host.
HOST_METHODS = frozenset({"cpu", "numpy", "tolist", "item"})


class BatchCopies(CollapsesRemovedCopies, TpuCodemod):
    """
    What it does
        Inside loops over a ``pl.MpDeviceLoader`` (one TPU103 wrapped, or one already there,
        also through ``enumerate``/``tqdm`` and a name or parameter it is passed by),
        ``.to(<the loader's device>)`` on the batch or anything taken from it (``batch["x"]``,
        ``inputs, labels = data``, comprehension variables over ``batch.items()``) is removed:
        ``x = x.to(device)`` and ``data, target = data.to(device), target.to(device)``
        disappear, ``inputs = batch["x"].to(device)`` becomes ``inputs = batch["x"]``,
        ``model(data.to(device))`` becomes ``model(data)``, and ``batch = {k: v.to(device) for
        k, v in batch.items()}`` disappears (assigned to another name it becomes ``inputs =
        dict(batch)``; ``tuple(t.to(device) for t in batch)`` becomes ``tuple(batch)``).

        The device is the loader's own (its second argument) or any spelling of the XLA device
        (``torch_xla.device()``, a name bound to it). Moves that also convert
        (``.to(device, torch.float16)``, ``.to(torch.float32)``), moves of other tensors, of
        values that left the device (``x.cpu()``) and copies made in another function the batch
        is passed to stay. A loop over a wrapper taken only on an XLA device (``pl.MpDeviceLoader
        (loader, device) if device.type == "xla" else loader``) keeps its copies: on the CPU
        they do the move. A removed copy takes its trailing comment and the comment lines right
        above it along, unless the next statement follows it with no blank line between (the
        comment then stays above that one: it may describe both).

        Split off from TPU103 (``TPU103`` still names it in selections, suppressions and
        options); it runs right after it.

    Why
        An MpDeviceLoader's batches are already on its device: each ``.to(device)`` of one is
        dead weight in every step's code. On XLA ``t.to(device)`` of a tensor already there
        returns ``t`` itself (verified: no op, no transfer), so deleting it changes nothing but
        the reading.

    Example
        Before::

            train_device_loader = pl.MpDeviceLoader(train_loader, device)
            for data, target in train_device_loader:
                data, target = data.to(device), target.to(device)
                loss = F.nll_loss(model(data), target)

        After::

            train_device_loader = pl.MpDeviceLoader(train_loader, device)
            for data, target in train_device_loader:
                loss = F.nll_loss(model(data), target)
    """

    CODE = "TPU122"
    NAME = "batch-copies"
    SUMMARY = "Drop per-batch .to(device) in loops over pl.MpDeviceLoader: its batches are there"
    SAFETY = Safety.SAFE
    TRIGGERS = ("loader", "Loader")

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        # a loop over an MpDeviceLoader, or over a loader TPU103 wraps in this pipeline
        return (
            facts.mentions("per_device_loader")
            or facts.uses(*DATA_LOADERS, *MP_DEVICE_LOADERS)
            or facts.iterates_word(lambda word: word.lower().endswith("loader"))
        )

    VALID = [
        Valid(
            "import torch\n"
            "import torch_xla.distributed.parallel_loader as pl\n"
            "\n"
            "\n"
            "def evaluate(model, loader, args):\n"
            "    device = args.device\n"
            '    device_loader = pl.MpDeviceLoader(loader, device) if torch.device(device).type == "xla" else loader\n'
            "    for x, y in device_loader:\n"
            "        model(x.to(device), y.to(device))\n",
            why="a wrapper taken only on XLA (a --device option may say cpu): the batch copies stay",
        ),
        Valid(
            "import torch\n"
            "import torch_xla.distributed.parallel_loader as pl\n"
            "\n"
            "\n"
            "def batches(loader, device):\n"
            "    for batch in pl.MpDeviceLoader(loader, device):\n"
            "        yield [t.to(device) for t in batch]\n",
            why="a generator re-yielding batches is a pipeline stage, not a batch consumer",
        ),
    ]

    INVALID = [
        Invalid(
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "import torch_xla.distributed.parallel_loader as pl\n"
            "\n"
            "device = torch.device('xla')\n"
            "loader = DataLoader(ds, batch_size=8)\n"
            "device_loader = pl.MpDeviceLoader(loader, device)\n"
            "for x, y in device_loader:\n"
            "    loss = model(x, y)\n"
            "    # the targets too\n"
            "    y = y.to(device)\n",
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "import torch_xla.distributed.parallel_loader as pl\n"
            "\n"
            "device = torch.device('xla')\n"
            "loader = DataLoader(ds, batch_size=8)\n"
            "device_loader = pl.MpDeviceLoader(loader, device)\n"
            "for x, y in device_loader:\n"
            "    loss = model(x, y)\n",
            why="the comment above a removed last statement goes with it",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self.moves: set[int] = set()  # ``.to(device)`` calls to unwrap
        self.devices: set[str] = set()  # how the device of the loop being scanned is spelled

    def visit_Module(self, node: cst.Module) -> bool:
        self.index = ModuleIndex(self, node)
        xla_devices = {"torch_xla.device()", *self.index.xla_device_names()}
        for loop in self.index.for_loops:
            if in_generator(self.index, loop):
                continue  # a data pipeline stage re-yielding batches, not a consumer
            loader, _ = self.index.unwrap_iterable(loop.iter)
            existing = self.index.device_loader_call(loader)
            if existing is not None:
                self._plan_moves(loop, {device_loader_device(existing), *xla_devices})
        return True

    def _plan_moves(self, loop: cst.For, devices: set[str]) -> None:
        """Find ``.to(device)`` calls on the batch (and what is taken from it) in ``loop``."""
        _, indexed = self.index.unwrap_iterable(loop.iter)
        target = loop.target
        if indexed:
            if not (isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2):
                return
            target = target.elements[1].value
        derived = set(names_in_target(target))
        self.devices = devices
        self._scan(loop.body, loop, devices, derived)

    def _scan(self, node: cst.CSTNode, loop, devices: set[str], derived: set[str]) -> None:
        """Walk statements in order, so a name counts as batch data only after it became so."""
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            return
        if isinstance(node, cst.BaseSmallStatement):
            self._collect_moves(node, loop, devices, derived)
            for target, value in assigned_pairs(node):
                if self._is_batch_data(value, derived, loop):
                    derived.update(names_in_target(target))
                else:  # ``x = x.cpu()``: from here on ``x`` is not on the device
                    derived.difference_update(names_in_target(target))
            return
        if isinstance(node, cst.For):
            self._collect_moves(node.iter, loop, devices, derived)
            if self._is_batch_data(node.iter, derived, loop):
                derived.update(names_in_target(node.target))
            self._scan(node.body, loop, devices, derived)
            if node.orelse is not None:
                self._scan(node.orelse, loop, devices, derived)
            return
        for child in node.children:
            if isinstance(child, (cst.BaseExpression, cst.WithItem)):
                self._collect_moves(child, loop, devices, derived)
            else:
                self._scan(child, loop, devices, derived)

    def _collect_moves(self, node, loop, devices: set[str], derived: set[str]) -> None:
        for call in calls_in(node):
            if self._is_device_move(call, devices) and self._is_batch_data(
                call.func.value, derived, loop  # type: ignore[attr-defined]
            ):
                self.moves.add(id(call))
                self.mark_enclosing(call)

    @staticmethod
    def _is_device_move(call: cst.Call, devices: set[str]) -> bool:
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "to"):
            return False
        if any(arg.star for arg in call.args):
            return False
        keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword}
        positional = positional_arguments(call)
        if not set(keywords) <= MOVE_KEYWORDS:
            return False
        if len(positional) == 1 and "device" not in keywords:
            target = positional[0].value
        elif not positional and "device" in keywords:
            target = keywords["device"]
        else:
            return False
        return code_of(target) in devices

    def _leaves_device(self, call: cst.Call) -> bool:
        """``t.cpu()``, ``t.numpy()``, ``t.to("cpu")``: the result is no longer on the device;
        ``t.to(torch.float16)`` and ``t.to(device, ...)`` stay on it."""
        method = call.func.attr.value  # type: ignore[attr-defined]
        if method in HOST_METHODS:
            return True
        if method != "to":
            return False
        positional = positional_arguments(call)
        keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword}
        first = positional[0].value if positional else keywords.get("device", keywords.get("dtype"))
        if first is None:
            return True
        return not (
            code_of(first) in self.devices
            or (isinstance(first, cst.Attribute) and code_of(first.value) == "torch")
        )

    def _is_batch_data(self, expr: cst.CSTNode, derived: set[str], loop, depth: int = 4) -> bool:
        """``expr`` is the batch or read from it (``batch["x"]``, ``data.float()``), also via a
        comprehension variable over such a value."""
        root = expr
        while True:
            if isinstance(root, (cst.Attribute, cst.Subscript)):
                root = root.value
            elif isinstance(root, cst.Call) and isinstance(root.func, cst.Attribute):
                if self._leaves_device(root):
                    return False
                root = root.func.value
            else:
                break
        if not isinstance(root, cst.Name) or depth == 0:
            return False
        for ancestor in self.index.ancestors(expr):
            if ancestor is loop:
                break
            if isinstance(ancestor, COMPREHENSIONS):
                comp_for = ancestor.for_in
                while comp_for is not None:
                    if root.value in names_in_target(comp_for.target):
                        return self._is_batch_data(comp_for.iter, derived, loop, depth - 1)
                    comp_for = comp_for.inner_for_in
        return root.value in derived

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if id(original_node) in self.moves:
            self.record_rewrite()
            return updated_node.func.value  # type: ignore[attr-defined]
        return self.collapse_container_call(original_node, updated_node)
