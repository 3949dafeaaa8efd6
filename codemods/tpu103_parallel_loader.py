"""TPU103: iterate DataLoaders through ``pl.MpDeviceLoader`` and drop the per-batch copies."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ScopeProvider

from migrate.fastcst.facts import FileFacts
from ._base import PL, ImportSpec, Invalid, Safety, TpuCodemod, Valid, code_of, walk_all
from ._loops import (
    DATA_LOADERS,
    MP_DEVICE_LOADERS,
    XLA_DEVICE_CALLS,
    ModuleIndex,
    assigned_pairs,
    calls,
    calls_in,
    is_per_device_loader_call,
    names_in_target,
    new_statement,
    positional_arguments,
    walk_code,
    without_items,
)
from ._statements import AppliesStatementEdits

PARALLEL_LOADER = "torch_xla.distributed.parallel_loader"
# When ``pl`` already names something else (``import pytorch_lightning as pl``).
MP_DEVICE_LOADER_IMPORT = ImportSpec(PARALLEL_LOADER, "MpDeviceLoader")
MAX_LINE = 100  # black's line length in this project; wider ``for`` headers get a named wrapper
# Keywords that only matter for CUDA host->device copies, per callee kind.
LOADER_CUDA_KEYWORDS = frozenset({"pin_memory", "pin_memory_device"})
COPY_CUDA_KEYWORDS = frozenset({"non_blocking"})
# ``.to(...)`` keywords a pure device move may carry; anything else (dtype, copy, ...) keeps it.
MOVE_KEYWORDS = frozenset({"device", "non_blocking"})
# Tensor methods whose result lives on the host.
HOST_METHODS = frozenset({"cpu", "numpy", "tolist", "item"})
# What tracing a device expression can tell: certainly an XLA device, maybe a device string
# (an option's value), or anything else (the CPU, a device of unknown origin).
XLA, STRING, OTHER = "xla", "string", "other"
TRACE_DEPTH = 4  # names, parameters and callers followed back from a loop's device
CONDITIONAL = object()  # _insert_wrapper: the wrapper is taken only on an XLA device
TORCH = ImportSpec("torch")
COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
# Builtins that turn an identity generator back into a container: ``tuple(t for t in b)``.
CONTAINER_BUILTINS = frozenset({"builtins.tuple", "builtins.list"})


def device_loader_name_for(loader: cst.BaseExpression) -> str:
    if isinstance(loader, cst.Name):
        return device_loader_name(loader.value)
    if isinstance(loader, cst.Attribute):
        return device_loader_name(loader.attr.value)
    return "device_loader"  # ``for x in DataLoader(...)``


def device_loader_name(loader: str) -> str:
    """``train_loader`` -> ``train_device_loader``, ``trainloader`` -> ``train_device_loader``,
    ``dataloader`` -> ``device_loader``, ``data`` -> ``data_device_loader``."""
    lowered = loader.lower()
    for suffix in ("dataloader", "loader"):
        if lowered.endswith(suffix):
            stem = loader[: -len(suffix)]
            if not stem:
                return "device_loader"
            return stem + ("device_loader" if stem.endswith("_") else "_device_loader")
    return loader + "_device_loader"


class ParallelLoader(AppliesStatementEdits, TpuCodemod):
    """
    What it does
        Makes every loop over a ``torch.utils.data.DataLoader`` iterate a
        ``pl.MpDeviceLoader(loader, device)`` and removes the per-batch copies that become no-ops:

        - a loader assigned in the loop's own function (or module, or ``self.x`` in the same
          method) gets ONE wrapper, ``train_device_loader = pl.MpDeviceLoader(train_loader,
          device)``, right after the DataLoader assignment when ``device`` is already defined
          there, otherwise right before the outermost loop holding the batch loop (so it is
          built once, not per epoch). ``enumerate(...)``, ``tqdm(...)`` and ``itertools.islice``
          around the loader are kept. The new name replaces a trailing ``loader``/``dataloader``
          by ``device_loader`` (``loader`` -> ``device_loader``), else appends
          ``_device_loader``; an existing ``x = pl.MpDeviceLoader(train_loader, ...)`` in that
          function is reused instead.
        - a loader the rule cannot trace to an assignment there (a parameter or attribute whose
          name ends with ``loader``, a parameter the callers in this file pass a DataLoader for,
          ``self.loader`` built in ``__init__``, a ``DataLoader(...)`` written in the ``for``)
          is wrapped at the loop: ``for x, y in pl.MpDeviceLoader(train_loader, device):``.
          That builds the wrapper on every call of the function (once per epoch for the usual
          ``train(...)`` function): cheap, as each ``iter()`` of an MpDeviceLoader starts a
          fresh ParallelLoader anyway. When the ``for`` line would pass 100 columns, the
          wrapper is named on the line before the loop instead. A parameter every caller in
          this file passes an MpDeviceLoader for (or ``.per_device_loader(device)``) is not
          wrapped again.
        - the device is ``self.device`` in a method of a class that assigns ``self.device``,
          else ``device`` when visible, else ``torch_xla.device()``.
        - a device that may not be an XLA device gets a wrapper taken on XLA only:
          ``train_device_loader = pl.MpDeviceLoader(train_loader, device) if device.type ==
          "xla" else train_loader`` (always named, never in the ``for`` header; for a device that
          may be a string, such as an option's value, the test is ``torch.device(device).type``),
          and the per-batch copies in its loops stay. The device counts as XLA when every value
          it can have, followed through assignments, parameters and the calls of this file
          (four levels), is ``torch_xla.device()`` (or ``"xla"``): then the output is the
          unconditional wrapper above. A device chosen by a flag or condition (``torch_xla.device()
          if args.accel else torch.device("cpu")``, ``if``/``else`` branches, ``--device``
          options) or of unknown origin (a parameter no call of this file passes,
          ``self.device = device`` from the caller) may be the CPU. A loader built in the ``for``
          header on such a device is not wrapped (the DataLoader would be built twice).
        - inside loops over an MpDeviceLoader (new or already there), ``.to(<the device>)`` on
          the batch or anything taken from it (``batch["x"]``, ``inputs, labels = data``,
          comprehension variables over ``batch.items()``) is removed: ``x = x.to(device)`` and
          ``data, target = data.to(device), target.to(device)`` disappear,
          ``inputs = batch["x"].to(device)`` becomes ``inputs = batch["x"]``,
          ``model(data.to(device))`` becomes ``model(data)``, and
          ``batch = {k: v.to(device) for k, v in batch.items()}`` disappears (assigned to another
          name it becomes ``inputs = dict(batch)``; ``tuple(t.to(device) for t in batch)``
          becomes ``tuple(batch)``). Moves that also convert (``.to(device, torch.float16)``,
          ``.to(torch.float32)``) and moves of other tensors stay.
        - ``pin_memory=...`` / ``pin_memory_device=...`` in DataLoader calls,
          ``"pin_memory": True`` in dict literals and ``dict(...)`` calls (the mnist
          ``cuda_kwargs``), ``non_blocking=...`` in every ``.to(...)`` call, and ``t.pin_memory()``
          (-> ``t``) are dropped.

        When ``pl`` already names something else (``import pytorch_lightning as pl``), the
        wrapper is spelled ``MpDeviceLoader(...)`` with a ``from ... import MpDeviceLoader``.
        Loops over ``zip(loader_a, loader_b)``, ``iter(loader)`` and locals of unknown origin are
        left alone, as are other uses of a loader (``len(train_loader.dataset)``) and copies
        made in another function the batch is passed to. A removed copy takes its trailing comment
        and the comment lines right above it along, unless the next statement follows it with no
        blank line between (the comment then stays above that one: it may describe both).

    Why
        ``MpDeviceLoader`` uploads batches on background threads while the device computes, and
        cuts the step graph (``torch_xla.sync()``) on every ``next()``: the idiomatic loop of every
        pytorch/xla example. Its batches are already on the XLA device, so per-batch ``.to`` calls
        are dead weight. ``pin_memory`` makes the DataLoader warn on a TPU host and
        ``xla_tensor.pin_memory()`` raises.

        ``pl.MpDeviceLoader`` only takes XLA devices: given the CPU it fails at the first batch
        ("Check failed: device.type() == at::kXLA (cpu vs. xla)"), so a script whose own flags
        can still choose the CPU (pytorch/examples mnist_rnn, dcgan, super_resolution without
        ``--accel``) must keep the plain loader there. Keeping the copies is the simplest
        design that is correct on every path: on XLA the batches are already on the device and
        ``t.to(device)`` returns ``t`` itself (verified: no op, no transfer), while on the CPU
        (or any other device) they do the move the loop needs. The conditional wrapper is not a
        certain step boundary, so TPU102 still ends such steps with ``torch_xla.sync()``: the
        CPU path has no loader to cut the graph and runs its step closures (TPU115) there; on
        XLA the loader's own sync at the next batch then finds an empty graph.

    Example
        Before::

            train_loader = DataLoader(train_ds, batch_size=64, pin_memory=True)
            for epoch in range(10):
                for data, target in train_loader:
                    data, target = data.to(device), target.to(device)
                    loss = F.nll_loss(model(data), target)

        After::

            train_loader = DataLoader(train_ds, batch_size=64)
            train_device_loader = pl.MpDeviceLoader(train_loader, device)
            for epoch in range(10):
                for data, target in train_device_loader:
                    loss = F.nll_loss(model(data), target)
    """

    CODE = "TPU103"
    NAME = "parallel-loader"
    SUMMARY = (
        "Iterate DataLoaders through pl.MpDeviceLoader, drop per-batch .to(device) and pin_memory"
    )
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("loader", "Loader", "pin_memory", "non_blocking")

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return (
            facts.mentions(*LOADER_CUDA_KEYWORDS, *COPY_CUDA_KEYWORDS, "per_device_loader")
            or facts.has_string(lambda s: s in LOADER_CUDA_KEYWORDS)  # {"pin_memory": True}
            or facts.uses(*DATA_LOADERS, *MP_DEVICE_LOADERS)
            # a loop over a parameter or attribute named ``*loader`` (``_clearly_a_loader``)
            or facts.iterates_word(lambda word: word.lower().endswith("loader"))
        )

    VALID = [
        Valid(
            "from torch.utils.data import DataLoader\n\n"
            "loader_a = DataLoader(ds_a, batch_size=8)\n"
            "loader_b = DataLoader(ds_b, batch_size=8)\n"
            "for a, b in zip(loader_a, loader_b):\n"
            "    train_pair(a.to(device), b.to(device))\n",
            why="zip over two loaders is left to a human; nothing is flagged",
        ),
        Valid(
            "import torch\n\n"
            "def run(batches, model, device):\n"
            "    for batch in batches:\n"
            "        model(batch.to(device))\n",
            why="a parameter with no loader name and no caller passing a DataLoader",
        ),
        Valid(
            "import torch\n\n"
            "def evaluate(model, make_loader, device):\n"
            "    loader = make_loader()\n"
            "    for x in iter(loader):\n"
            "        model(x.to(device))\n",
            why="a local of unknown origin, iterated through iter(): not traced",
        ),
        Valid(
            "import torch\n\n\n"
            "class Prefetcher:\n"
            "    def __init__(self, loader):\n"
            "        self.loader = loader\n\n"
            "    def __iter__(self):\n"
            "        for batch in self.loader:\n"
            "            yield [t.to(device) for t in batch]\n",
            why="a generator re-yielding batches is a pipeline stage, not a batch consumer",
        ),
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
            why="pin_memory False is harmless; copy=True is not a plain device move",
        ),
        Valid(
            "import torch\n"
            "import torch_xla\n"
            "from torch.utils.data import DataLoader\n\n"
            "device = torch_xla.device() if use_accel else torch.device('cpu')\n"
            "for x, y in DataLoader(ds, batch_size=8):\n"
            "    model(x.to(device), y.to(device))\n",
            why="a loader built in the for header, on a device that may be the CPU: no wrapper "
            "(it would build the DataLoader twice), the copies stay",
        ),
    ]

    INVALID = [
        Invalid(
            "import torch\n"
            "from torch.utils.data import DataLoader\n\n"
            "device = torch.device('xla')\n"
            "loader = DataLoader(ds, batch_size=8)\n"
            "for x, y in loader:\n"
            "    loss = model(x, y)\n"
            "    # the targets too\n"
            "    y = y.to(device)\n",
            "import torch\n"
            "from torch.utils.data import DataLoader\n"
            "import torch_xla.distributed.parallel_loader as pl\n\n"
            "device = torch.device('xla')\n"
            "loader = DataLoader(ds, batch_size=8)\n"
            "device_loader = pl.MpDeviceLoader(loader, device)\n"
            "for x, y in device_loader:\n"
            "    loss = model(x, y)\n",
            why="the comment above a removed last statement goes with it",
        ),
        Invalid(
            "import torch\n"
            "import torch_xla\n\n\n"
            "def main(ds, device_loader):\n"
            "    device = torch_xla.device()\n"
            "    loader = torch.utils.data.DataLoader(ds)\n"
            "    for batch in loader:\n"
            "        step(batch.to(device), device_loader)\n",
            "import torch\n"
            "import torch_xla\n"
            "import torch_xla.distributed.parallel_loader as pl\n\n\n"
            "def main(ds, device_loader):\n"
            "    device = torch_xla.device()\n"
            "    loader = torch.utils.data.DataLoader(ds)\n"
            "    for batch in pl.MpDeviceLoader(loader, device):\n"
            "        step(batch, device_loader)\n",
            why="the wrapper's name is taken in that function: wrap at the loop instead",
        ),
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
            "import torch\n\n\n"
            "def evaluate(model, loader, args):\n"
            "    device = args.device\n"
            "    for x, y in loader:\n"
            "        model(x.to(device, non_blocking=True), y.to(device))\n",
            "import torch\n"
            "import torch_xla.distributed.parallel_loader as pl\n\n\n"
            "def evaluate(model, loader, args):\n"
            "    device = args.device\n"
            "    device_loader = pl.MpDeviceLoader(loader, device) if torch.device(device).type == "
            '"xla" else loader\n'
            "    for x, y in device_loader:\n"
            "        model(x.to(device), y.to(device))\n",
            why="a --device option's value may be a string ('cpu'): torch.device() reads its type",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self.replace: dict[int, cst.BaseExpression] = {}  # loader reference -> new name
        self.wrap: dict[int, cst.BaseExpression] = {}  # loader reference -> device to wrap with
        self.moves: set[int] = set()  # ``.to(device)`` calls to unwrap
        self.collapsible: set[int] = set()  # comprehensions/conditionals that held a move
        self.candidates: set[int] = set()  # assignments that held a move
        self.dropped: set[int] = set()  # assignments that became ``x = x``
        self.new_names: dict[int, set[str]] = {}  # id(owner) -> wrapper names given there
        self.source_lines: list[str] | None = None
        self.devices: set[str] = set()  # how the device of the loop being scanned is spelled

    # ------------------------------------------------------------------ planning
    def visit_Module(self, node: cst.Module) -> bool:
        self.index = ModuleIndex(self, node)
        self.wrapper_callee, self.wrapper_import = (
            ("pl.MpDeviceLoader", PL)
            if self._alias_is_free(node, "pl")
            else ("MpDeviceLoader", MP_DEVICE_LOADER_IMPORT)
        )
        self.xla_devices = {"torch_xla.device()", *self.index.xla_device_names()}
        device_loops: list[tuple[cst.For, str]] = []
        groups: dict[tuple[int, str], list[tuple[cst.For, cst.BaseExpression]]] = {}
        for loop in self.index.for_loops:
            if self._in_generator(loop):
                continue  # a data pipeline stage re-yielding batches, not a consumer
            loader, _ = self.index.unwrap_iterable(loop.iter)
            existing = self.index.device_loader_call(loader)
            if existing is not None:
                device_loops.append((loop, self._device_argument(existing)))
            elif self._traced_here(loop, loader):
                key = (id(self.index.owner(loop)), code_of(loader))
                groups.setdefault(key, []).append((loop, loader))
            elif self.index.is_data_loader_call(loader) or self._clearly_a_loader(loader):
                device_loops.append((loop, self._wrap_at_loop(loop, loader)))
        for members in groups.values():
            device_loops.extend(self._plan_group(members))
        for loop, device in device_loops:
            if device is not None:  # None: wrapped only when the device is XLA, copies stay
                self._plan_moves(loop, {device, *self.xla_devices})
        return True

    def _alias_is_free(self, module: cst.Module, alias: str) -> bool:
        """``alias`` is unbound in the module or already names the parallel_loader module."""
        scope = self.get_metadata(ScopeProvider, module, None)
        if scope is None or alias not in scope:
            return True
        return all(
            {q.name for q in assignment.get_qualified_names_for(alias)} == {PARALLEL_LOADER}
            for assignment in scope[alias]
        )

    def _in_generator(self, loop: cst.For) -> bool:
        owner = self.index.owner(loop)
        return isinstance(owner, cst.FunctionDef) and any(
            isinstance(node, cst.Yield) for node in walk_code(owner.body)
        )

    def _traced_here(self, loop: cst.For, loader: cst.BaseExpression) -> bool:
        """``loader`` is a name or ``self`` attribute only ever assigned a DataLoader, and (for
        an attribute) only in the loop's own function."""
        source = self.index.source_of(loader)
        if source is None or not source.bindings:
            return False
        if not all(self.index.is_data_loader_call(b.value) for b in source.bindings):
            return False
        if isinstance(loader, cst.Attribute):
            return all(b.owner is self.index.owner(loop) for b in source.bindings)
        return True

    def _clearly_a_loader(self, loader: cst.BaseExpression) -> bool:
        """A parameter or attribute named ``*loader``, or a parameter that callers in this file
        pass a DataLoader for; never one that any caller passes an MpDeviceLoader for."""
        source = self.index.source_of(loader)
        if isinstance(loader, cst.Name) and (source is None or source.parameter is None):
            return False
        if not isinstance(loader, (cst.Name, cst.Attribute)):
            return False
        name = loader.value if isinstance(loader, cst.Name) else loader.attr.value
        passed: list[cst.BaseExpression] = []
        if source is not None and source.parameter is not None and source.function is not None:
            passed = self.index.call_arguments(source.function, source.parameter)
        elif source is not None:
            passed = [binding.value for binding in source.bindings]
        if any(self.index.device_loader_call(value) is not None for value in passed):
            return False
        return name.lower().endswith("loader") or any(
            self.index.is_data_loader_call(value) or self.index.traces_to_data_loader(value)
            for value in passed
        )

    def _plan_group(self, members):
        """One wrapper for every batch loop of one loader in one function (or the module)."""
        loops = [loop for loop, _ in members]
        loader = members[0][1]
        owner = self.index.owner(loops[0])
        reused = self._existing_wrapper(owner, loader, loops)
        name = reused or device_loader_name_for(loader)
        if reused is None and self._name_taken(owner, name):
            return [(loop, self._wrap_at_loop(loop, ref)) for loop, ref in members]
        self.new_names.setdefault(id(owner), set()).add(name)
        if reused is not None:
            device = self._device_argument(self._existing_call(owner, reused))
        else:
            device = self._insert_wrapper(owner, loader, loops, name)
            if device is None:
                return [(loop, self._wrap_at_loop(loop, ref)) for loop, ref in members]
        for _, ref in members:
            self.replace[id(ref)] = cst.Name(name)
        if device is CONDITIONAL:
            return [(loop, None) for loop in loops]
        return [(loop, device) for loop in loops]

    def _insert_wrapper(self, owner, loader, loops, name):
        """Place ``name = pl.MpDeviceLoader(loader, device)``; the device's code, CONDITIONAL
        when the wrapper is taken only on an XLA device, or None when it cannot be placed."""
        bindings = self.index.source_of(loader).bindings  # type: ignore[union-attr]
        here = [b for b in bindings if b.owner is owner]
        loader_code = code_of(loader)
        if (
            len(bindings) == 1
            and here
            and all(self.index.runs_after(here[0].statement, loop) for loop in loops)
            and self._device_defined_before(here[0])
        ):
            wrapper, conditional = self._wrapper_code(loader_code, "device", here[0].statement)
            self.edits.insert_after(here[0].statement, new_statement(f"{name} = {wrapper}"))
            self._record_wrapper()
            return CONDITIONAL if conditional else "device"
        outers = [self.index.outermost_loop_of(loop) or loop for loop in loops]
        first = min(outers, key=self.position)
        block = self.index.parent(first)
        if not all(self.index.parent(outer) is block for outer in outers):
            return None
        if any(self.position(b.statement) >= self.position(first) for b in here):
            return None  # the loader is (re)built inside the loops: wrapping it once is wrong
        device_code = code_of(self._device_for(first))
        wrapper, conditional = self._wrapper_code(loader_code, device_code, first)
        self.edits.insert_before(first, new_statement(f"{name} = {wrapper}"))
        self._record_wrapper()
        return CONDITIONAL if conditional else device_code

    def _record_wrapper(self) -> None:
        self.require_import(self.wrapper_import)
        self.record_rewrite()

    def _wrap_at_loop(self, loop: cst.For, loader: cst.BaseExpression) -> str | None:
        """Wrap ``loader`` in the ``for`` header; when that would push the header past 100
        columns, name the wrapper on the line before the loop instead (same per-call cost).
        A device that may not be XLA gets the named, conditional wrapper (None: the batch
        copies stay), or no wrapper when the loader is built in the header or the name is
        taken."""
        device = self._device_for(loop)
        device_code = code_of(device)
        check = self._xla_check(device_code, loop)
        if check is not None:
            name = device_loader_name_for(loader)
            owner = self.index.owner(loop)
            if isinstance(loader, (cst.Name, cst.Attribute)) and not self._name_taken(owner, name):
                self.new_names.setdefault(id(owner), set()).add(name)
                wrapper = self._conditional(code_of(loader), device_code, check)
                self.edits.insert_before(loop, new_statement(f"{name} = {wrapper}"))
                self.replace[id(loader)] = cst.Name(name)
                self._record_wrapper()
            return None
        loader_code = code_of(self._without_loader_keywords(loader))
        added = len(f"{self.wrapper_callee}(, {device_code})") + len(loader_code)
        width = self._header_width(loop) - len(code_of(loader)) + added
        name = device_loader_name_for(loader)
        owner = self.index.owner(loop)
        if width > MAX_LINE and not self._name_taken(owner, name):
            self.new_names.setdefault(id(owner), set()).add(name)
            self.edits.insert_before(
                loop, new_statement(f"{name} = {self.wrapper_callee}({loader_code}, {device_code})")
            )
            self.replace[id(loader)] = cst.Name(name)
            self._record_wrapper()
            return device_code
        self.wrap[id(loader)] = device
        return device_code

    def _header_width(self, loop: cst.For) -> int:
        """Columns of the first line of the ``for`` statement as written."""
        if self.source_lines is None:
            self.source_lines = self.index.module.code.splitlines()
        line, _ = self.position(loop)
        return len(self.source_lines[line - 1]) if 0 < line <= len(self.source_lines) else 0

    def _existing_wrapper(self, owner, loader, loops) -> str | None:
        """A name this function already assigned ``pl.MpDeviceLoader(<loader>, ...)`` to."""
        first_loop = min(self.position(loop) for loop in loops)
        for binding in self.index.all_bindings:
            value = binding.value
            if (
                binding.owner is owner
                and isinstance(binding.target, cst.Name)
                and self.index.is_device_loader_call(value)
                and positional_arguments(value)
                and code_of(positional_arguments(value)[0].value) == code_of(loader)
                and self.position(binding.statement) < first_loop
            ):
                return binding.target.value
        return None

    def _existing_call(self, owner, name: str) -> cst.Call:
        for binding in self.index.all_bindings:
            if binding.owner is owner and code_of(binding.target) == name:
                if self.index.is_device_loader_call(binding.value):
                    return binding.value  # type: ignore[return-value]
        raise LookupError(name)

    def _name_taken(self, owner, name: str) -> bool:
        """``name`` already means something in ``owner`` (or is this pass's name for another
        loader there)."""
        if name in self.new_names.setdefault(id(owner), set()):
            return True
        return any(isinstance(node, cst.Name) and node.value == name for node in walk_all(owner))

    def _device_defined_before(self, binding) -> bool:
        """``device`` names something at the loader's assignment: a parameter, a global, or a
        local assigned earlier."""
        try:
            scope = self.get_metadata(ScopeProvider, binding.target)
        except KeyError:
            return False
        if scope is None or "device" not in scope:
            return False
        for assignment in scope["device"]:
            node = getattr(assignment, "node", None)
            if isinstance(node, cst.Param) or assignment.scope is not scope:
                return True
            if node is not None and self.position(node) < self.position(binding.statement):
                return True
        return False

    def _device_for(self, node: cst.CSTNode) -> cst.BaseExpression:
        """``self.device`` in a method of a class that keeps its device there, else the base
        rule's choice (``device`` when visible, else ``torch_xla.device()``)."""
        owner = self.index.owner(node)
        cls = self.index.enclosing_class(owner) if isinstance(owner, cst.FunctionDef) else None
        if cls is not None and (id(cls), "device") in self.index.self_bindings:
            return cst.parse_expression("self.device")
        return self.device_expression(node)

    def _device_argument(self, call: cst.Call) -> str:
        positional = positional_arguments(call)
        device_position = 0 if is_per_device_loader_call(call) else 1
        if len(positional) > device_position:
            return code_of(positional[device_position].value)
        keyword = next((a for a in call.args if a.keyword and a.keyword.value == "device"), None)
        return code_of(keyword.value) if keyword else "torch_xla.device()"

    # ------------------------------------------------------------------ is the device XLA?
    def _wrapper_code(self, loader_code: str, device_code: str, at: cst.CSTNode):
        """``pl.MpDeviceLoader(loader, device)``, made conditional on the device being an XLA
        device when it may not be one; and whether it was."""
        check = self._xla_check(device_code, at)
        if check is None:
            return f"{self.wrapper_callee}({loader_code}, {device_code})", False
        return self._conditional(loader_code, device_code, check), True

    def _conditional(self, loader_code: str, device_code: str, check: str) -> str:
        return f"{self.wrapper_callee}({loader_code}, {device_code}) if {check} else {loader_code}"

    def _xla_check(self, device_code: str, at: cst.CSTNode) -> str | None:
        """None when the device spelled ``device_code`` at ``at`` is certainly an XLA device,
        else the test that it is one: ``device.type == "xla"`` (``torch.device(device).type``
        when it may be a string, such as an option's value)."""
        if device_code == "torch_xla.device()":
            return None
        if device_code == "self.device":
            owner = self.index.owner(at)
            cls = self.index.enclosing_class(owner) if isinstance(owner, cst.FunctionDef) else None
            found = self.index.self_bindings.get((id(cls), "device"), []) if cls else []
            verdicts = [self._device_kind(b.value, TRACE_DEPTH) for b in found]
        else:
            try:
                scope = self.get_metadata(ScopeProvider, at)
            except KeyError:
                scope = None
            if scope is None or device_code not in scope:
                verdicts = []
            else:
                verdicts = self._assignments_kind(scope[device_code], TRACE_DEPTH)
        if verdicts and all(kind == XLA for kind in verdicts):
            return None
        if STRING in verdicts:
            self.require_import(TORCH)
            return f'torch.device({device_code}).type == "xla"'
        return f'{device_code}.type == "xla"'

    def _device_kind(self, expr: cst.BaseExpression, depth: int) -> str:
        """XLA (certainly an XLA device), STRING (may be a device string) or OTHER."""
        if calls(self, expr, XLA_DEVICE_CALLS):
            return XLA
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return XLA if _is_xla_string(expr) else STRING
        if isinstance(expr, cst.Call) and self.is_name(expr.func, "torch.device"):
            positional = positional_arguments(expr)
            if positional and _is_xla_string(positional[0].value):
                return XLA
            return OTHER
        if isinstance(expr, cst.IfExp):
            kinds = {self._device_kind(expr.body, depth), self._device_kind(expr.orelse, depth)}
            return XLA if kinds == {XLA} else (STRING if STRING in kinds else OTHER)
        if depth > 0 and (
            isinstance(expr, cst.Name)
            or (isinstance(expr, cst.Attribute) and code_of(expr.value) == "self")
        ):
            if isinstance(expr, cst.Name):
                bound = self.bindings_of(expr)
                kinds = self._assignments_kind(bound[1], depth) if bound else []
            else:
                values = self.index.binding_values(expr) or []
                kinds = [self._device_kind(value, depth - 1) for value in values]
            if kinds and all(kind == XLA for kind in kinds):
                return XLA
            return STRING if STRING in kinds else OTHER
        if isinstance(expr, (cst.Attribute, cst.Subscript)):
            return STRING  # ``args.device``, ``config["device"]``: an option's value
        return OTHER

    def _assignments_kind(self, assignments, depth: int) -> list[str]:
        """The kinds of what each assignment of a name gives it; a parameter gives what the
        calls in this module pass (none known: OTHER)."""
        kinds = []
        for assignment in assignments:
            node = getattr(assignment, "node", None)
            if isinstance(node, cst.Param):
                function = self.index.owner(node)
                passed = (
                    self.index.call_arguments(function, node)
                    if isinstance(function, cst.FunctionDef)
                    else []
                )
                kinds.extend(self._device_kind(value, depth - 1) for value in passed)
                if not passed:
                    kinds.append(OTHER)
                continue
            binding = self.index.bindings.get(id(node))
            kinds.append(OTHER if binding is None else self._device_kind(binding.value, depth - 1))
        return kinds

    # ------------------------------------------------------------------ per-batch copies
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
                self._mark_enclosing(call)

    def _mark_enclosing(self, call: cst.Call) -> None:
        """Remember what may collapse once ``call`` is gone: comprehensions and conditionals that
        become copies, and the statement that may become ``x = x``."""
        for ancestor in self.index.ancestors(call):
            if isinstance(ancestor, (*COMPREHENSIONS, cst.IfExp)):
                self.collapsible.add(id(ancestor))
            elif isinstance(ancestor, (cst.Assign, cst.Expr)):
                self.candidates.add(id(ancestor))
            elif isinstance(ancestor, cst.BaseStatement):
                break

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

    # ------------------------------------------------------------------ rewriting
    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self._loader_reference(original_node, updated_node)

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        return self._loader_reference(original_node, updated_node)

    def _loader_reference(self, original, updated) -> cst.BaseExpression:
        if id(original) in self.replace:
            self.record_rewrite()
            return self.replace[id(original)]
        if id(original) in self.wrap:
            self._record_wrapper()
            return cst.Call(
                func=cst.parse_expression(self.wrapper_callee),
                args=[cst.Arg(updated), cst.Arg(self.wrap[id(original)])],
            )
        return updated

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if id(original_node) in self.moves:
            self.record_rewrite()
            return updated_node.func.value  # type: ignore[attr-defined]
        updated_node = self._without_cuda_keywords(original_node, updated_node)
        if self._is_pin_memory_call(original_node):
            self._mark_enclosing(original_node)
            self.record_rewrite()
            return updated_node.func.value  # type: ignore[attr-defined]
        updated_node = self._collapse_container_call(original_node, updated_node)
        return self._loader_reference(original_node, updated_node)

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

    def _without_loader_keywords(self, loader: cst.BaseExpression) -> cst.BaseExpression:
        """``DataLoader(ds, pin_memory=True)`` as it will read once this rule is done."""
        if self.index.is_data_loader_call(loader):
            return _without_keywords(loader, LOADER_CUDA_KEYWORDS)  # type: ignore[arg-type]
        return loader

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

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        # ``v.to(device) if torch.is_tensor(v) else v`` lost its move: both branches agree.
        if id(original_node) in self.collapsible and code_of(updated_node.body) == code_of(
            updated_node.orelse
        ):
            return updated_node.body
        return updated_node

    def leave_DictComp(
        self, original_node: cst.DictComp, updated_node: cst.DictComp
    ) -> cst.BaseExpression:
        source = _identity_dict_source(updated_node)
        if id(original_node) in self.collapsible and source is not None:
            return cst.Call(func=cst.Name("dict"), args=[cst.Arg(source)])
        return updated_node

    def leave_ListComp(
        self, original_node: cst.ListComp, updated_node: cst.ListComp
    ) -> cst.BaseExpression:
        source = _identity_source(updated_node)
        if id(original_node) in self.collapsible and source is not None:
            return cst.Call(func=cst.Name("list"), args=[cst.Arg(source)])
        return updated_node

    def _collapse_container_call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """``tuple(t for t in batch)`` (its move removed) -> ``tuple(batch)``."""
        if not (
            len(original.args) == 1
            and isinstance(original.args[0].value, cst.GeneratorExp)
            and id(original.args[0].value) in self.collapsible
            and self.is_name(original.func, *CONTAINER_BUILTINS)
        ):
            return updated
        generator = updated.args[0].value
        source = _identity_source(generator) if isinstance(generator, cst.GeneratorExp) else None
        if source is None:
            return updated
        return updated.with_changes(args=[updated.args[0].with_changes(value=source)])

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        if id(original_node) in self.candidates and _is_self_assignment(
            updated_node, isinstance(original_node.value, cst.DictComp)
        ):
            self.dropped.add(id(original_node))
        return updated_node

    def leave_Expr(self, original_node: cst.Expr, updated_node: cst.Expr) -> cst.Expr:
        # ``batch.to(device)`` as a statement did nothing; without the move it is a bare name.
        if id(original_node) in self.candidates and isinstance(updated_node.value, cst.Name):
            self.dropped.add(id(original_node))
        return updated_node

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        return self.edits.remove_small_statements(original_node, updated_node, self.dropped)


def _is_xla_string(node: cst.BaseExpression) -> bool:
    if not isinstance(node, cst.SimpleString):
        return False
    text = node.evaluated_value
    return isinstance(text, str) and (text == "xla" or text.startswith("xla:"))


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


def _single_for(comp) -> cst.CompFor | None:
    comp_for = comp.for_in
    if comp_for.inner_for_in is not None or comp_for.ifs or comp_for.asynchronous is not None:
        return None
    return comp_for


def _identity_source(comp: cst.ListComp | cst.GeneratorExp) -> cst.BaseExpression | None:
    """``X`` for ``[t for t in X]`` / ``(t for t in X)``."""
    comp_for = _single_for(comp)
    if comp_for is None or not isinstance(comp_for.target, cst.Name):
        return None
    if isinstance(comp.elt, cst.Name) and comp.elt.value == comp_for.target.value:
        return comp_for.iter
    return None


def _identity_dict_source(comp: cst.DictComp) -> cst.BaseExpression | None:
    """``X`` for ``{k: v for k, v in X.items()}``."""
    comp_for = _single_for(comp)
    if comp_for is None or names_in_target(comp_for.target) != [
        code_of(comp.key),
        code_of(comp.value),
    ]:
        return None
    items = comp_for.iter
    if (
        isinstance(items, cst.Call)
        and not items.args
        and isinstance(items.func, cst.Attribute)
        and items.func.attr.value == "items"
    ):
        return items.func.value
    return None


def _is_self_assignment(assign: cst.Assign, from_dict_comp: bool) -> bool:
    """``x = x``, ``a, b = a, b``, or ``batch = dict(batch)`` made from a copying comprehension."""
    if len(assign.targets) != 1:
        return False
    target, value = assign.targets[0].target, assign.value
    if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)):
        return len(target.elements) == len(value.elements) and all(
            code_of(left.value) == code_of(right.value)
            for left, right in zip(target.elements, value.elements)
        )
    if code_of(target) == code_of(value):
        return True
    return (
        from_dict_comp
        and isinstance(value, cst.Call)
        and code_of(value.func) == "dict"
        and len(value.args) == 1
        and code_of(value.args[0].value) == code_of(target)
    )
