"""TPU123: drop ``pin_memory`` and ``non_blocking``, the knobs of CUDA host->device copies."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import Invalid, Safety, TpuCodemod, Valid
from ._copies import CollapsesRemovedCopies
from ._loops import ModuleIndex, without_items

# Keywords that only matter for CUDA host->device copies, per callee kind.
LOADER_CUDA_KEYWORDS = frozenset({"pin_memory", "pin_memory_device"})
COPY_CUDA_KEYWORDS = frozenset({"non_blocking"})


class PinMemory(CollapsesRemovedCopies, TpuCodemod):
    """
    What it does
        Removes what only tunes CUDA host->device copies:

        - ``pin_memory=...`` / ``pin_memory_device=...`` in DataLoader calls, and
          ``"pin_memory": True`` in dict literals and ``dict(...)`` calls (the mnist
          ``cuda_kwargs``), with or without a DataLoader in the file;
        - ``non_blocking=...`` in every ``.to(...)`` call;
        - ``t.pin_memory()``, which becomes ``t``: ``y = y.pin_memory()`` disappears, and a
          comprehension or conditional left copying its input collapses
          (``[t.pin_memory() for t in batch]`` -> ``list(batch)``).

        ``"pin_memory": False`` stays (harmless), and so does ``self.x.pin_memory()`` inside a
        method named ``pin_memory``: the custom-batch hook of the DataLoader documentation.

        Split off from TPU103 (``TPU103`` still names it in selections, suppressions and
        options). It runs right before TPU103, so that a loader wrapped in its ``for`` header
        reads as it will once these are gone (a header that would pass 100 columns is split).

    Why
        Pinned memory is page-locked host memory for CUDA's asynchronous copies. On a TPU host
        the DataLoader warns that pin_memory is set with no accelerator to use it, and
        ``xla_tensor.pin_memory()`` raises. ``non_blocking`` is a CUDA stream hint: the XLA
        backend ignores it, and ``pl.MpDeviceLoader`` (TPU103) already overlaps the uploads
        with the step.

    Example
        Before::

            cuda_kwargs = {"num_workers": 1, "pin_memory": True}
            loader = DataLoader(train_ds, batch_size=64, pin_memory=True)
            x = x.to(device, non_blocking=True)

        After::

            cuda_kwargs = {"num_workers": 1}
            loader = DataLoader(train_ds, batch_size=64)
            x = x.to(device)
    """

    CODE = "TPU123"
    NAME = "pin-memory"
    SUMMARY = "Drop pin_memory and non_blocking: CUDA host-copy knobs that warn or fail on XLA"
    SAFETY = Safety.SAFE
    TRIGGERS = ("pin_memory", "non_blocking")

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.mentions(*LOADER_CUDA_KEYWORDS, *COPY_CUDA_KEYWORDS) or facts.has_string(
            lambda s: s in LOADER_CUDA_KEYWORDS  # {"pin_memory": True}
        )

    VALID = [
        Valid(
            "import torch\n\n"
            "class Batch:\n"
            "    def pin_memory(self):\n"
            "        self.inp = self.inp.pin_memory()\n"
            "        return self\n",
            why="the custom-batch pin_memory() hook of the DataLoader docs is left as written",
        ),
        Valid(
            "import torch\n\n"
            "options = {'pin_memory': False, 'num_workers': 2}\n"
            "x = x.to(device, copy=True)\n",
            why="pin_memory False is harmless; copy=True is not a CUDA copy knob",
        ),
    ]

    INVALID = [
        Invalid(
            "import torch\n\n"
            "kwargs = dict(batch_size=8, pin_memory=True)\n"
            "x = x.cuda_like().to(dev, non_blocking=True)\n"
            "y = y.pin_memory()\n"
            "z = pinned(y.pin_memory())\n",
            "import torch\n\n"
            "kwargs = dict(batch_size=8)\n"
            "x = x.cuda_like().to(dev)\n"
            "z = pinned(y)\n",
            why="CUDA host-copy knobs are dropped wherever they appear",
        ),
        Invalid(
            "import torch\n\n"
            "cuda_kwargs = {'num_workers': 1, 'pin_memory': True}\n"
            "train_kwargs.update(cuda_kwargs)\n",
            "import torch\n\n"
            "cuda_kwargs = {'num_workers': 1}\n"
            "train_kwargs.update(cuda_kwargs)\n",
            why="a pin_memory dict entry with no DataLoader in the file",
        ),
        Invalid(
            "from torch.utils.data import DataLoader\n\n"
            "loader = DataLoader(\n"
            "    ds,\n"
            "    batch_size=8,\n"
            "    pin_memory=True,\n"
            "    pin_memory_device='cuda',\n"
            ")\n"
            "batch = [t.pin_memory() for t in next(iter(loader))]\n",
            "from torch.utils.data import DataLoader\n\n"
            "loader = DataLoader(\n"
            "    ds,\n"
            "    batch_size=8,\n"
            ")\n"
            "batch = list(next(iter(loader)))\n",
            why="a multi-line DataLoader call keeps its layout; a comprehension left copying "
            "its input collapses",
        ),
    ]

    def visit_Module(self, node: cst.Module) -> bool:
        self.index = ModuleIndex(self, node)
        return True

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        updated_node = self._without_cuda_keywords(original_node, updated_node)
        if self._is_pin_memory_call(original_node):
            self.mark_enclosing(original_node)
            self.record_rewrite()
            return updated_node.func.value  # type: ignore[attr-defined]
        return self.collapse_container_call(original_node, updated_node)

    def _without_cuda_keywords(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        func = original.func
        if self.index.is_data_loader_call(original):
            dropped = LOADER_CUDA_KEYWORDS
        elif isinstance(func, cst.Attribute) and func.attr.value == "to":
            dropped = COPY_CUDA_KEYWORDS
        elif self.is_name(func, "builtins.dict"):
            return self._without_pin_memory_true(updated)
        else:
            return updated
        cleaned = _without_keywords(updated, dropped)
        if cleaned is not updated:
            self.record_rewrite()
        return cleaned

    def _without_pin_memory_true(self, updated: cst.Call) -> cst.Call:
        args = without_items(
            updated.args,
            lambda arg: arg.keyword is not None
            and arg.keyword.value == "pin_memory"
            and _is_true(arg.value),
        )
        if len(args) == len(updated.args):
            return updated
        self.record_rewrite()
        return updated.with_changes(args=args)

    def _is_pin_memory_call(self, call: cst.Call) -> bool:
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "pin_memory") or call.args:
            return False
        owner = self.index.owner(call)
        return not (isinstance(owner, cst.FunctionDef) and owner.name.value == "pin_memory")

    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict) -> cst.Dict:
        elements = without_items(updated_node.elements, _is_pin_memory_entry)
        if len(elements) == len(updated_node.elements):
            return updated_node
        self.record_rewrite()
        return updated_node.with_changes(elements=elements)


def _without_keywords(call: cst.Call, dropped: frozenset[str]) -> cst.Call:
    args = without_items(
        call.args, lambda arg: arg.keyword is not None and arg.keyword.value in dropped
    )
    return call if len(args) == len(call.args) else call.with_changes(args=args)


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _is_pin_memory_entry(element: cst.BaseDictElement) -> bool:
    return (
        isinstance(element, cst.DictElement)
        and isinstance(element.key, cst.SimpleString)
        and element.key.evaluated_value == "pin_memory"
        and _is_true(element.value)
    )
