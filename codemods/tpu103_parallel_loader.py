"""TPU103: iterate DataLoaders through ``pl.MpDeviceLoader``."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ScopeProvider

from migrate.fastcst.facts import FileFacts
from ._base import PL, ImportSpec, Invalid, Safety, TpuCodemod, Valid, code_of, walk_all
from ._loops import (
    DATA_LOADERS,
    XLA_DEVICE_CALLS,
    ModuleIndex,
    calls,
    in_generator,
    new_statement,
    positional_arguments,
)
from ._statements import AppliesStatementEdits

PARALLEL_LOADER = "torch_xla.distributed.parallel_loader"
# When ``pl`` already names something else (``import pytorch_lightning as pl``).
MP_DEVICE_LOADER_IMPORT = ImportSpec(PARALLEL_LOADER, "MpDeviceLoader")
MAX_LINE = 100  # black's line length in this project; wider ``for`` headers get a named wrapper
# What tracing a device expression can tell: certainly an XLA device, maybe a device string
# (an option's value), or anything else (the CPU, a device of unknown origin).
XLA, STRING, OTHER = "xla", "string", "other"
TRACE_DEPTH = 4  # names, parameters and callers followed back from a loop's device
TORCH = ImportSpec("torch")


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
        ``pl.MpDeviceLoader(loader, device)``:

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
          may be a string, such as an option's value, the test is ``torch.device(device).type``).
          The device counts as XLA when every value it can have, followed through assignments,
          parameters and the calls of this file (four levels), is ``torch_xla.device()`` (or
          ``"xla"``): then the output is the unconditional wrapper above. A device chosen by a
          flag or condition (``torch_xla.device() if args.accel else torch.device("cpu")``,
          ``if``/``else`` branches, ``--device`` options) or of unknown origin (a parameter no
          call of this file passes, ``self.device = device`` from the caller) may be the CPU. A
          loader built in the ``for`` header on such a device is not wrapped (the DataLoader
          would be built twice).

        When ``pl`` already names something else (``import pytorch_lightning as pl``), the
        wrapper is spelled ``MpDeviceLoader(...)`` with a ``from ... import MpDeviceLoader``.
        Loops over ``zip(loader_a, loader_b)``, ``iter(loader)`` and locals of unknown origin are
        left alone, as are other uses of a loader (``len(train_loader.dataset)``) and loops in
        generators (a pipeline stage re-yielding batches).

        TPU103 was split (issue 26); it still names its parts in selections, suppressions and
        options: TPU123 (``pin_memory``/``non_blocking`` dropped) runs right before it, TPU122
        (the per-batch ``.to(device)`` in the wrapped loops dropped) right after it.

    Why
        ``MpDeviceLoader`` uploads batches on background threads while the device computes, and
        cuts the step graph (``torch_xla.sync()``) on every ``next()``: the idiomatic loop of every
        pytorch/xla example.

        ``pl.MpDeviceLoader`` only takes XLA devices: given the CPU it fails at the first batch
        ("Check failed: device.type() == at::kXLA (cpu vs. xla)"), so a script whose own flags
        can still choose the CPU (pytorch/examples mnist_rnn, dcgan, super_resolution without
        ``--accel``) must keep the plain loader there, and the loop its per-batch copies (TPU122
        leaves the copies of a conditional wrapper's loops alone): on XLA the batches are
        already on the device and ``t.to(device)`` returns ``t`` itself, while on the CPU they do
        the move the loop needs. The conditional wrapper is not a certain step boundary, so
        TPU102 still ends such steps with ``torch_xla.sync()``: the CPU path has no loader to cut
        the graph and runs its step closures (TPU115) there; on XLA the loader's own sync at the
        next batch then finds an empty graph.

    Example
        Before::

            train_loader = DataLoader(train_ds, batch_size=64)
            for epoch in range(10):
                for data, target in train_loader:
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
    SUMMARY = "Iterate DataLoaders through pl.MpDeviceLoader (a wrapper built once, on XLA devices)"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("loader", "Loader")

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return (
            facts.uses(*DATA_LOADERS)
            # a loop over a parameter or attribute named ``*loader`` (``_clearly_a_loader``)
            or facts.iterates_word(lambda word: word.lower().endswith("loader"))
        )

    VALID = [
        Valid(
            "import torch\n"
            "from accelerate import Accelerator\n"
            "from torch.utils.data import DataLoader\n"
            "\n"
            "\n"
            "def train_epoch(model, optimizer, train_loader, accelerator):\n"
            "    for x, y in train_loader:\n"
            "        loss = torch.nn.functional.cross_entropy(model(x), y)\n"
            "        accelerator.backward(loss)\n"
            "        optimizer.step()\n"
            "        optimizer.zero_grad()\n"
            "\n"
            "\n"
            "def main():\n"
            "    accelerator = Accelerator()\n"
            "    train_loader = DataLoader(train_set, batch_size=32, shuffle=True)\n"
            "    model, optimizer, train_loader = accelerator.prepare(\n"
            "        model, optimizer, train_loader\n"
            "    )\n"
            "    train_epoch(model, optimizer, train_loader, accelerator)\n",
            why="a loader Accelerate prepared is on the device already, in the function it is passed to",
        ),
        Valid(
            "from torch.utils.data import DataLoader\n"
            "\n"
            "loader_a = DataLoader(ds_a, batch_size=8)\n"
            "loader_b = DataLoader(ds_b, batch_size=8)\n"
            "for a, b in zip(loader_a, loader_b):\n"
            "    train_pair(a.to(device), b.to(device))\n",
            why="zip over two loaders is left to a human; nothing is flagged",
        ),
        Valid(
            "import torch\n"
            "\n"
            "def run(batches, model, device):\n"
            "    for batch in batches:\n"
            "        model(batch.to(device))\n",
            why="a parameter with no loader name and no caller passing a DataLoader",
        ),
        Valid(
            "import torch\n"
            "\n"
            "def evaluate(model, make_loader, device):\n"
            "    loader = make_loader()\n"
            "    for x in iter(loader):\n"
            "        model(x.to(device))\n",
            why="a local of unknown origin, iterated through iter(): not traced",
        ),
        Valid(
            "import torch\n"
            "\n"
            "\n"
            "class Prefetcher:\n"
            "    def __init__(self, loader):\n"
            "        self.loader = loader\n"
            "\n"
            "    def __iter__(self):\n"
            "        for batch in self.loader:\n"
            "            yield [t.to(device) for t in batch]\n",
            why="a generator re-yielding batches is a pipeline stage, not a batch consumer",
        ),
        Valid(
            "import torch\n"
            "import torch_xla\n"
            "from torch.utils.data import DataLoader\n"
            "\n"
            "device = torch_xla.device() if use_accel else torch.device('cpu')\n"
            "for x, y in DataLoader(ds, batch_size=8):\n"
            "    model(x.to(device), y.to(device))\n",
            why="a loader built in the for header, on a device that may be the CPU: no wrapper (it would build the DataLoader twice), the copies stay",
        ),
    ]

    INVALID = [
        Invalid(
            "import torch\n"
            "import torch_xla\n"
            "\n"
            "\n"
            "def main(ds, device_loader):\n"
            "    device = torch_xla.device()\n"
            "    loader = torch.utils.data.DataLoader(ds)\n"
            "    for batch in loader:\n"
            "        step(batch.to(device), device_loader)\n",
            "import torch\n"
            "import torch_xla\n"
            "import torch_xla.distributed.parallel_loader as pl\n"
            "\n"
            "\n"
            "def main(ds, device_loader):\n"
            "    device = torch_xla.device()\n"
            "    loader = torch.utils.data.DataLoader(ds)\n"
            "    for batch in pl.MpDeviceLoader(loader, device):\n"
            "        step(batch.to(device), device_loader)\n",
            why="the wrapper's name is taken in that function: wrap at the loop instead",
        ),
        Invalid(
            "import torch\n"
            "\n"
            "\n"
            "def evaluate(model, loader, args):\n"
            "    device = args.device\n"
            "    for x, y in loader:\n"
            "        model(x.to(device), y.to(device))\n",
            "import torch\n"
            "import torch_xla.distributed.parallel_loader as pl\n"
            "\n"
            "\n"
            "def evaluate(model, loader, args):\n"
            "    device = args.device\n"
            '    device_loader = pl.MpDeviceLoader(loader, device) if torch.device(device).type == "xla" else loader\n'
            "    for x, y in device_loader:\n"
            "        model(x.to(device), y.to(device))\n",
            why="a --device option's value may be a string ('cpu'): torch.device() reads its type",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self.replace: dict[int, cst.BaseExpression] = {}  # loader reference -> new name
        self.wrap: dict[int, cst.BaseExpression] = {}  # loader reference -> device to wrap with
        self.new_names: dict[int, set[str]] = {}  # id(owner) -> wrapper names given there
        self.source_lines: list[str] | None = None

    # ------------------------------------------------------------------ planning
    def visit_Module(self, node: cst.Module) -> bool:
        self.index = ModuleIndex(self, node)
        self.wrapper_callee, self.wrapper_import = (
            ("pl.MpDeviceLoader", PL)
            if self._alias_is_free(node, "pl")
            else ("MpDeviceLoader", MP_DEVICE_LOADER_IMPORT)
        )
        groups: dict[tuple[int, str], list[tuple[cst.For, cst.BaseExpression]]] = {}
        for loop in self.index.for_loops:
            if in_generator(self.index, loop):
                continue  # a data pipeline stage re-yielding batches, not a consumer
            loader, _ = self.index.unwrap_iterable(loop.iter)
            if self.index.device_loader_call(loader) is not None:
                continue  # wrapped already (TPU122 drops its copies)
            if self.index.frameworks.owns_code(loop.body):
                continue  # the framework puts its loaders on the device
            if self._traced_here(loop, loader):
                key = (id(self.index.owner(loop)), code_of(loader))
                groups.setdefault(key, []).append((loop, loader))
            elif self.index.is_data_loader_call(loader) or self._clearly_a_loader(loader):
                self._wrap_at_loop(loop, loader)
        for members in groups.values():
            self._plan_group(members)
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

    def _plan_group(self, members) -> None:
        """One wrapper for every batch loop of one loader in one function (or the module)."""
        loops = [loop for loop, _ in members]
        loader = members[0][1]
        owner = self.index.owner(loops[0])
        reused = self._existing_wrapper(owner, loader, loops)
        name = reused or device_loader_name_for(loader)
        placed = reused is not None or not self._name_taken(owner, name)
        if placed:
            self.new_names.setdefault(id(owner), set()).add(name)
            placed = reused is not None or self._insert_wrapper(owner, loader, loops, name)
        for loop, ref in members:
            if placed:
                self.replace[id(ref)] = cst.Name(name)
            else:
                self._wrap_at_loop(loop, ref)

    def _insert_wrapper(self, owner, loader, loops, name) -> bool:
        """Place ``name = pl.MpDeviceLoader(loader, device)`` (taken only on an XLA device when
        the device may not be one); False when it cannot be placed."""
        bindings = self.index.source_of(loader).bindings  # type: ignore[union-attr]
        here = [b for b in bindings if b.owner is owner]
        loader_code = code_of(loader)
        if (
            len(bindings) == 1
            and here
            and all(self.index.runs_after(here[0].statement, loop) for loop in loops)
            and self._device_defined_before(here[0])
        ):
            wrapper = self._wrapper_code(loader_code, "device", here[0].statement)
            self.edits.insert_after(here[0].statement, new_statement(f"{name} = {wrapper}"))
            self._record_wrapper()
            return True
        outers = [self.index.outermost_loop_of(loop) or loop for loop in loops]
        first = min(outers, key=self.position)
        block = self.index.parent(first)
        if not all(self.index.parent(outer) is block for outer in outers):
            return False
        if any(self.position(b.statement) >= self.position(first) for b in here):
            return False  # the loader is (re)built inside the loops: wrapping it once is wrong
        device_code = code_of(self._device_for(first))
        wrapper = self._wrapper_code(loader_code, device_code, first)
        self.edits.insert_before(first, new_statement(f"{name} = {wrapper}"))
        self._record_wrapper()
        return True

    def _record_wrapper(self) -> None:
        self.require_import(self.wrapper_import)
        self.record_rewrite()

    def _wrap_at_loop(self, loop: cst.For, loader: cst.BaseExpression) -> None:
        """Wrap ``loader`` in the ``for`` header; when that would push the header past 100
        columns, name the wrapper on the line before the loop instead (same per-call cost).
        A device that may not be XLA gets the named, conditional wrapper, or no wrapper when the
        loader is built in the header or the name is taken."""
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
            return
        loader_code = code_of(loader)
        width = self._header_width(loop) + len(f"{self.wrapper_callee}(, {device_code})")
        name = device_loader_name_for(loader)
        owner = self.index.owner(loop)
        if width > MAX_LINE and not self._name_taken(owner, name):
            self.new_names.setdefault(id(owner), set()).add(name)
            self.edits.insert_before(
                loop, new_statement(f"{name} = {self.wrapper_callee}({loader_code}, {device_code})")
            )
            self.replace[id(loader)] = cst.Name(name)
            self._record_wrapper()
            return
        self.wrap[id(loader)] = device

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

    # ------------------------------------------------------------------ is the device XLA?
    def _wrapper_code(self, loader_code: str, device_code: str, at: cst.CSTNode) -> str:
        """``pl.MpDeviceLoader(loader, device)``, made conditional on the device being an XLA
        device when it may not be one."""
        check = self._xla_check(device_code, at)
        if check is None:
            return f"{self.wrapper_callee}({loader_code}, {device_code})"
        return self._conditional(loader_code, device_code, check)

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
        return self._loader_reference(original_node, updated_node)


def _is_xla_string(node: cst.BaseExpression) -> bool:
    if not isinstance(node, cst.SimpleString):
        return False
    text = node.evaluated_value
    return isinstance(text, str) and (text == "xla" or text.startswith("xla:"))
