"""TPU121: a slice whose start moves every step becomes an ``index_select`` (one graph, not one
per offset)."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import ImportSpec, Invalid, Safety, TpuCodemod, Valid, code_of, dotted_name
from ._loops import ModuleIndex
from ._step_code import StepCode
from ._tensors import TensorFacts

TORCH = ImportSpec("torch")


class MovingSlices(TpuCodemod):
    """
    What it does
        Rewrites a read of a tensor slice in step code whose start advances with a loop
        (``source[i:i + n]``, ``i`` the loop's offset or a parameter a loop passes it to, as
        TPU117 defines step code) into a gather with an index tensor built on the host::

            source.index_select(0, torch.arange(*slice(i, i + n).indices(source.size(0))).to(source.device))

        ``slice(...).indices(size)`` gives the start, stop and step the slice would take, so the
        rows are exactly the slice's, clamping at the end included. A slice of another dimension
        (``x[:, i:i + n]``) selects along that dimension.

        Only where nothing but a tensor can be sliced: the source is a tensor as far as this
        file can follow it (through its assignments, what this file's functions return, what
        every call of a function passes for a parameter, and methods only tensors have, such as
        ``.contiguous()`` or ``.narrow()``), and it is a name or an attribute (it is written
        twice). Left to TPU117's TPU257 finding: slices that are written to (``x[i:j] = v``,
        ``x[i:j].zero_()``: a gather is a copy, not a view), slices mixed with integer indices,
        and sources this file cannot tell are tensors.

    Why
        A Python int in a slice is a constant of the traced graph, so a slice whose start
        changes every step compiles a new XLA graph every step (measured on XLA:CPU: 10
        compilations for 10 offsets; pytorch/examples' word_language_model takes seconds per
        batch). The index tensor of ``index_select`` is data: its values change, its shape does
        not, and the graph is compiled once (measured: 1 compilation after the first step). The
        index is built on the host and uploaded, as a data loader's batch would be.

        An empty slice whose stop comes before its start (``x[i - 5:i]`` at ``i = 2``) raises
        in ``torch.arange`` instead of giving an empty tensor.

    Example
        Before::

            def get_batch(source, i):
                seq_len = min(args.bptt, len(source) - 1 - i)
                return source[i:i + seq_len]

        After::

            def get_batch(source, i):
                seq_len = min(args.bptt, len(source) - 1 - i)
                return source.index_select(0, torch.arange(*slice(i, i + seq_len).indices(source.size(0))).to(source.device))
    """

    CODE = "TPU121"
    NAME = "moving-slices"
    SUMMARY = "A slice whose start moves every step becomes index_select (one XLA graph)"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("backward", "forward")

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return (
            facts.calls("backward")
            or facts.uses("torch.autograd.backward")
            or (facts.mentions("forward") and facts.defines_subclass_of("torch.nn"))
        )

    VALID = [
        Valid(
            "import torch\n\n\ndef train(model, batches, opt):\n"
            "    for i in range(0, len(batches), 4):\n"
            "        group = batches[i:i + 4]\n"
            "        loss = sum(model(b).sum() for b in group)\n"
            "        loss.backward()\n        opt.step()\n",
            why="a list of batches: nothing says the source is a tensor",
        ),
        Valid(
            "import torch\n\n\ndef train(model, data: torch.Tensor, opt):\n"
            "    for i in range(0, data.size(0), 4):\n"
            "        loss = model(data[i:i + 4, 0]).sum()\n        loss.backward()\n"
            "        opt.step()\n"
            "    tail = data[i:]\n",
            why="a slice mixed with an integer index, and one after the loop, are not rewritten",
        ),
        Valid(
            "import torch\n\n\ndef train(model, data: torch.Tensor, opt):\n"
            "    for i in range(4):\n"
            "        loss = model(data[0:8]).sum()\n        loss.backward()\n        opt.step()\n",
            why="a fixed slice is one graph already",
        ),
    ]

    INVALID = [
        Invalid(
            "from torch import randn\n\n\ndef train(model, opt):\n"
            "    data = randn(1000, 8)\n"
            "    for i in range(0, 1000, 10):\n"
            "        model(data[i:i + 10]).sum().backward()\n        opt.step()\n",
            "from torch import randn\nimport torch\n\n\ndef train(model, opt):\n"
            "    data = randn(1000, 8)\n"
            "    for i in range(0, 1000, 10):\n"
            "        model(data.index_select(0, torch.arange(*slice(i, i + 10).indices("
            "data.size(0))).to(data.device))).sum().backward()\n        opt.step()\n",
            why="torch is imported when the file did not import it",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._rewrites: dict[int, cst.BaseExpression] = {}  # id(original Subscript) -> new

    def visit_Module(self, node: cst.Module) -> bool:
        index = ModuleIndex(self, node)
        facts = TensorFacts(self, index)
        step = StepCode(self, index, facts)
        for subscript in index.nodes:
            if type(subscript) is cst.Subscript:
                new = self._gather(subscript, index, facts, step)
                if new is not None:
                    self._rewrites[id(subscript)] = new
        return True

    def _gather(
        self, subscript: cst.Subscript, index: ModuleIndex, facts: TensorFacts, step: StepCode
    ) -> cst.BaseExpression | None:
        elements = [element.slice for element in subscript.slice]
        if not all(isinstance(element, cst.Slice) for element in elements):
            return None
        bounded = [
            n for n, e in enumerate(elements) if (e.lower, e.upper, e.step) != (None, None, None)
        ]
        source = dotted_name(subscript.value)
        if len(bounded) != 1 or not source or _is_written(subscript, index):
            return None
        start = step.moving_start(subscript)
        dim = bounded[0]
        if start is None or start is not elements[dim].lower:
            return None
        if not facts.is_tensor_across_calls(subscript.value):
            return None
        window = elements[dim]
        bounds = [code_of(window.lower), code_of(window.upper) if window.upper else "None"]
        if window.step is not None:
            bounds.append(code_of(window.step))
        self.require_import(TORCH)
        return cst.parse_expression(
            f"{source}.index_select({dim}, torch.arange(*slice({', '.join(bounds)})"
            f".indices({source}.size({dim}))).to({source}.device))"
        )

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript):
        new = self._rewrites.get(id(original_node))
        if new is None:
            return updated_node
        self.record_rewrite()
        return new.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)


def _is_written(subscript: cst.Subscript, index: ModuleIndex) -> bool:
    """``x[i:j] = v``, ``x[i:j] += v``, ``del x[i:j]``, ``x[i:j].add_(v)``: a view is needed."""
    parent = index.parent(subscript)
    if isinstance(parent, (cst.AssignTarget, cst.Del)):
        return True
    if isinstance(parent, cst.AugAssign) and parent.target is subscript:
        return True
    node = subscript
    while isinstance(parent, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
        node, parent = parent, index.parent(parent)  # ``a, x[i:j] = ...``
    if isinstance(parent, cst.For) and parent.target is node:
        return True
    if node is not subscript:
        return isinstance(parent, cst.AssignTarget)
    if isinstance(parent, cst.Attribute) and parent.value is subscript:
        name = parent.attr.value
        return name.endswith("_") and not name.startswith("__")
    return False
