"""TPU117: report what makes XLA recompile, sync or diverge inside the step."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import FindingDoc, Invalid, Safety, TpuCodemod, Valid, code_of
from ._loops import ModuleIndex
from ._step_code import StepCode
from ._tensors import TensorFacts

DYNAMIC_SHAPE = "TPU251"
TENSOR_CONTROL_FLOW = "TPU252"
HOST_TRANSFER = "TPU253"
HOST_FACTORY = "TPU254"
STORAGE_IDENTITY = "TPU256"
MOVING_SLICE = "TPU257"
CPU_FALLBACK_LAYER = "TPU258"
# Layers torch_xla 2.9 does not lower: their forward and backward run on the CPU.
FALLBACK_LAYERS = ("torch.nn.EmbeddingBag", "torch.nn.functional.embedding_bag")

DYNAMIC_FUNCTIONS = frozenset(
    {"nonzero", "unique", "unique_consecutive", "masked_select", "argwhere"}
)
TRANSFER_METHODS = frozenset({"tolist", "numpy", "cpu"})
FACTORIES = frozenset(
    {"zeros", "ones", "empty", "full", "arange", "range", "linspace", "logspace", "rand",
     "randn", "randint", "randperm", "tensor", "eye", "tril_indices", "triu_indices"}
)  # fmt: skip
STORAGE_METHODS = frozenset({"data_ptr", "untyped_storage", "storage", "_cdata"})
STORAGE_RAISES = "XLA tensors have no storage: this raises; do not rely on storage identity"
STORAGE_MESSAGES = {
    "data_ptr": "data_ptr() is 0 for every XLA tensor: identity checks built on it break"
}
CONTROL_FLOW = {cst.If: "if", cst.While: "while", cst.Assert: "assert", cst.IfExp: "if-else"}


class XlaHazards(TpuCodemod):
    """
    What it does
        Reports (finding and inline TODO marker) the patterns that make a migrated script
        recompile, sync with the host or silently diverge on XLA. It rewrites nothing.

        Where: data-dependent shapes, control flow and host transfers are reported only in
        code that runs on the device every step: the body of a training loop (the innermost
        loop around a ``.backward()`` call, or around a call of a function of this file that
        calls ``.backward()`` outside a loop), such step functions themselves, ``forward``
        methods of ``nn.Module`` classes, and every function of this file they call (followed
        through plain calls and ``self.method()`` calls). Code after the batch loop (epoch
        end), data preparation and evaluation helpers called from the epoch loop are not
        step code. Code under a periodic guard (an ``if`` whose test uses ``%``, like
        ``if step % 100 == 0:``) runs every N steps, which is the recommended place for
        syncs, and is not reported either.

        - TPU251 data-dependent shapes: ``torch.nonzero`` / ``.nonzero()``, ``unique``,
          ``unique_consecutive``, ``masked_select``, ``argwhere``, ``torch.where(cond)`` with
          one argument, a boolean-mask gather ``x[mask]`` and a boolean-mask write TPU116 could
          not rewrite (the mask is a comparison, ``~``/``&``/``|``, ``torch.isnan``,
          ``.bool()``, a ``dtype=torch.bool`` factory or a name bound to one).
        - TPU252 ``if`` / ``while`` / ``assert`` / ``a if c else b`` on a tensor value
          (``if loss < best:``, ``while t.sum() > 0:``, ``assert (x > 0).all()``). A value is a
          tensor when it comes from a torch function, a tensor method, an ``nn`` layer or
          model call, a ``forward`` input or an annotated ``torch.Tensor`` parameter;
          ``.item()``, ``.dim()``, ``.shape`` are Python values (``.item()`` is TPU115's).
        - TPU253 ``.tolist()``, ``.numpy()``, ``.cpu()``, ``.to("cpu")`` in step code (once
          per chain: ``x.cpu().numpy()`` is one transfer).
        - TPU254 ``torch.zeros/ones/empty/full/arange/rand/randn/randint/tensor/eye/...``
          without ``device=`` in ``forward`` or a function it calls, unless moved at once
          (``.to(x.device)``). The message names ``forward``'s first input as the device to
          use. TPU145 runs first and gives ``device=x.device`` to the factories whose own
          arguments read a tensor ``x`` (``x.size(0)``, ``x.shape``, ``x.dtype``); the ones
          reported here read none, and the first input is only a guess: an input can
          legitimately live on the CPU (``lengths`` for ``pack_padded_sequence``).
        - TPU256 ``.data_ptr()``, ``.untyped_storage()``, ``.storage()`` anywhere in the file
          (identity logic breaks wherever the tensor is an XLA tensor).
        - TPU257 a slice in step code whose start advances with a loop (``source[i:i + n]``,
          ``i`` the loop's offset or a parameter a loop passes it to): one graph per offset.
        - TPU258 ``nn.EmbeddingBag`` / ``F.embedding_bag`` anywhere in the file: torch_xla runs
          them on the CPU.

        ``.item()`` is handled by TPU115; CUDA-only APIs (streams, events, graphs, NVTX,
        custom kernels) by TPU104 (TPU201/TPU202). Weight tying undone by the move to the device
        (TPU255) is TPU139's, which was part of this rule: ``TPU117`` still names it in
        selections and suppressions.

    Why
        XLA compiles one graph per distinct program and shape. A shape that depends on the data
        (TPU251) compiles a new graph for each new count and falls back to the CPU; Python
        control flow on a tensor (TPU252) and host copies (TPU253) cut the graph and wait for
        the device in the middle of every step; CPU-created tensors (TPU254) fail with a device
        mismatch or are uploaded every step; XLA tensors have no storage (``data_ptr()`` is 0,
        ``untyped_storage()`` raises: TPU256); an ``EmbeddingBag`` runs on the CPU (TPU258).

    Example
        Before::

            for x, y in loader:
                loss = criterion(model(x), y)
                if loss < best:
                    best = loss

        After::

            for x, y in loader:
                loss = criterion(model(x), y)
                # TODO(tpu-migrate): TPU252 Python if on a tensor value syncs with the host ...
                if loss < best:
                    best = loss
    """

    CODE = "TPU117"
    NAME = "xla-hazards"
    SUMMARY = "Report what recompiles, syncs with the host or breaks on XLA in the step"
    SAFETY = Safety.MANUAL
    # Step code (loops around a backward, forward methods), storage identity.
    TRIGGERS = ("backward", "forward", "data_ptr", "storage(")

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return (
            facts.calls(*STORAGE_METHODS)
            or facts.uses(*FALLBACK_LAYERS)
            or facts.calls("backward")
            or facts.uses("torch.autograd.backward")
            or (facts.mentions("forward") and facts.defines_subclass_of("torch.nn"))
        )

    FINDINGS = {
        DYNAMIC_SHAPE: FindingDoc(
            "data-dependent shape in step code (nonzero, unique, masked_select, x[mask])",
            why="The number of elements these ops return depends on the data. XLA compiles a "
            "graph for fixed shapes, so every new count compiles a new graph (measured: 6 "
            "compiles in 5 steps) and the op falls back to the CPU with a host round trip "
            "(aten::nonzero).",
            what_to_do="Keep shapes fixed: x.masked_fill(~mask, 0) or torch.where(mask, x, 0) "
            "instead of x[mask]; reduce with mask.sum() as the count; torch.topk, one-hot "
            "products, scatter_add or bincount(minlength=n) instead of unique; "
            "torch.nonzero_static(x, size=k) with a fixed size. Data-dependent selection that "
            "is really needed belongs outside the step (data loading, evaluation at epoch end).",
        ),
        TENSOR_CONTROL_FLOW: FindingDoc(
            "Python control flow on a tensor value in step code",
            why="Python must know the branch, so bool(tensor) copies the value to the host: "
            "the graph is cut, the device finishes the pending work, and the rest of the step "
            "becomes a second graph (2 executions per step instead of 1, plus a compile per "
            "branch taken).",
            what_to_do="Compute both outcomes and select with torch.where / torch.clamp, keep "
            "running values such as the best loss as tensors, or move the check out of the "
            "step: do it every N steps under if step % N == 0 or inside "
            "xm.add_step_closure(...), e.g. for NaN checks.",
        ),
        HOST_TRANSFER: FindingDoc(
            "host transfer (.tolist() / .numpy() / .cpu()) inside the training step",
            why="The copy needs the value, so XLA executes the graph built so far and waits "
            "for it in the middle of the step: one extra execution and a device-to-host "
            "transfer per step, and the host can no longer trace ahead of the device.",
            what_to_do="Keep the values on the device and read them once per epoch or every N "
            "steps (accumulate in a device tensor, or collect in xm.add_step_closure(...) "
            "under if step % N == 0). Metrics for a plot can be gathered after the loop.",
        ),
        HOST_FACTORY: FindingDoc(
            "tensor created without device= in forward: it lands on the CPU",
            why="torch.zeros / arange / tensor(...) without device= create a CPU tensor. "
            "Mixed with XLA inputs this raises a device-mismatch error, or the op runs on the "
            "CPU and the tensor is uploaded on every call.",
            what_to_do="Pass device=x.device (x: an input of forward), use x.new_zeros(...) / "
            "torch.zeros_like(x), or register a constant once as a buffer in __init__ "
            "(self.register_buffer('pos', torch.arange(n), persistent=False)) so that "
            "model.to(device) moves it.",
        ),
        STORAGE_IDENTITY: FindingDoc(
            "data_ptr() / storage() identity does not work on XLA tensors",
            why="XLA tensors have no host storage: data_ptr() returns 0 for every tensor (so "
            "identity checks say everything is shared) and untyped_storage() / storage() "
            "raise.",
            what_to_do="Compare tensors with `is`, track sharing by parameter name "
            "(model.named_parameters(remove_duplicate=False)), or do the storage logic on "
            "CPU copies before moving to the device.",
        ),
        CPU_FALLBACK_LAYER: FindingDoc(
            "nn.EmbeddingBag falls back to the CPU on XLA: host round trips every step",
            why="torch_xla 2.9 has no lowering for aten::_embedding_bag: its forward and its "
            "backward run on the CPU, each copying the table's inputs and results between the "
            "device and the host and cutting the step's graph (measured: 2 transfers per bag "
            "per step; dlrm with its tables, 7 per step).",
            what_to_do="When every bag has the same number of indices, use nn.Embedding on a "
            "(batch, bag) index tensor and reduce with .sum(1) / .mean(1) (per_sample_weights: "
            "multiply before the sum); pad variable bags to a fixed size with a padding_idx "
            "row. The weight keeps its shape, so checkpoints still load.",
        ),
        MOVING_SLICE: FindingDoc(
            "a slice whose start moves every step: XLA compiles one graph per offset",
            why="A Python int in a slice is a constant of the traced graph. Slicing a device "
            "tensor at a start that advances each step (source[i:i + bptt] with i the loop's "
            "offset) gives a new graph every step: it compiles again and again (measured on "
            "pytorch/examples' word_language_model: 2 compilations per step, seconds per batch "
            "on XLA:CPU).",
            what_to_do="Keep the data the step slices on the CPU and move each batch with "
            ".to(device) (the slice happens on the host; every batch has one shape, one "
            "graph), or select on the device with an index tensor: torch.index_select(source, "
            "0, offsets + start) where start is a device tensor, not a Python int.",
        ),
    }

    VALID = [
        Valid(
            "import numpy as np\nimport torch\n\n\ndef prepare(labels):\n"
            "    arr = np.asarray(labels)\n    keep = arr.nonzero()[0]\n"
            "    classes = np.unique(arr)\n    return torch.tensor(arr[keep]), classes\n",
            why="nonzero/unique in data preparation on the CPU",
        ),
        Valid(
            "import torch\n\n\ndef build():\n    grid = torch.zeros(4, 4)\n"
            "    return grid[grid > 0], torch.nonzero(grid)\n",
            why="not step code: not forward, no training loop calls it",
        ),
        Valid(
            "import torch\n\n\ndef evaluate(model, loader):\n    preds = []\n"
            "    with torch.no_grad():\n        for x, y in loader:\n"
            "            preds.extend(model(x).argmax(1).cpu().tolist())\n    return preds\n",
            why="an evaluation loop (no backward) is not a training step",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\ndef same_storage(a, b):\n"
            "    return a.data_ptr() == b.data_ptr()\n\n\ndef shares(a, b):\n"
            "    return a.untyped_storage() is b.storage()\n",
            "import torch\n\n\ndef same_storage(a, b):\n"
            "    # TODO(tpu-migrate): TPU256 data_ptr() is 0 for every XLA tensor: "
            "identity checks built on it break\n    return a.data_ptr() == b.data_ptr()\n\n\n"
            "def shares(a, b):\n"
            "    # TODO(tpu-migrate): TPU256 XLA tensors have no storage: this raises; do "
            "not rely on storage identity\n    return a.untyped_storage() is b.storage()\n",
            findings=["TPU256", "TPU256", "TPU256", "TPU256"],
            why="storage identity anywhere in the file",
        ),
        Invalid(
            "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
            "    def forward(self, x, lengths):\n        x[lengths == 0] = 0\n"
            "        x[x > 1] += 1\n        return x\n",
            "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
            "    def forward(self, x, lengths):\n"
            "        # TODO(tpu-migrate): TPU251 boolean-mask write has a data-dependent "
            "shape; use masked_fill_ / torch.where\n        x[lengths == 0] = 0\n"
            "        # TODO(tpu-migrate): TPU251 boolean-mask write has a data-dependent "
            "shape; use masked_fill_ / torch.where\n        x[x > 1] += 1\n        return x\n",
            findings=["TPU251", "TPU251"],
            why="boolean-mask writes TPU116 leaves alone (per-row mask, +=) in forward",
        ),
        Invalid(
            "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
            "    def forward(self, x):\n"
            "        # TODO(tpu-migrate): TPU252 Python if on a tensor value syncs with "
            "the host every step\n        if x.sum() > 0:\n            x = x * 2\n"
            "        return x\n",
            "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
            "    def forward(self, x):\n"
            "        # TODO(tpu-migrate): TPU252 Python if on a tensor value syncs with "
            "the host every step\n        if x.sum() > 0:\n            x = x * 2\n"
            "        return x\n",
            findings=["TPU252"],
            why="an existing marker is not repeated",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self.index: ModuleIndex | None = None
        self.facts: TensorFacts | None = None
        self.step: StepCode | None = None

    # ----------------------------------------------------------------- where code runs
    def visit_Module(self, node: cst.Module) -> bool:
        self.index = ModuleIndex(self, node)
        self.facts = TensorFacts(self, self.index)
        self.step = StepCode(self, self.index, self.facts)
        for inner in self.index.nodes:
            self._check(inner)
        return True

    # ----------------------------------------------------------------- findings
    def _check(self, node: cst.CSTNode) -> None:
        kind = type(node)  # (exact: libcst's node classes are final)
        if kind is cst.Call:
            self._check_call(node)
        elif kind is cst.Subscript:
            self._check_subscript(node)
        elif type(node) in CONTROL_FLOW:
            self._check_control_flow(node)

    def _check_call(self, call: cst.Call) -> None:
        # Cheap syntactic tests first: most calls of a module run outside step code, and
        # resolving what a call names is the costly part.
        facts = self.facts
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in STORAGE_METHODS and not call.args:
            method = facts.method_of(call)
            if method is not None:
                if not (isinstance(method[0], cst.Name) and method[0].value == "self"):
                    self.flag(
                        call, STORAGE_IDENTITY, STORAGE_MESSAGES.get(method[1], STORAGE_RAISES)
                    )
                return
        if self.is_name(func, *FALLBACK_LAYERS):
            self.flag(
                call,
                CPU_FALLBACK_LAYER,
                "nn.EmbeddingBag falls back to the CPU on XLA: host round trips every step",
            )
            return
        region = self.step.region(call)
        if region is None:
            return
        function = facts.torch_function(func)
        method = facts.method_of(call)
        if function in DYNAMIC_FUNCTIONS or (function == "where" and _one_argument(call)):
            name = "torch.where(cond)" if function == "where" else f"torch.{function}"
            self.flag(call, DYNAMIC_SHAPE, _dynamic_message(name))
        elif method is not None and method[1] in DYNAMIC_FUNCTIONS:
            self.flag(call, DYNAMIC_SHAPE, _dynamic_message(f".{method[1]}()"))
        elif method is not None and self._is_transfer(call, method[1]):
            if not self._is_transfer_receiver(call) and not facts.is_layer(method[0]):
                self.flag(
                    call,
                    HOST_TRANSFER,
                    f"{_transfer_label(method[1])} copies to the host on every step; read "
                    "values every N steps",
                )
        elif region == "forward" and function in FACTORIES and facts.lands_on_cpu(call):
            device = self._forward_input(call)
            self.flag(
                call,
                HOST_FACTORY,
                f"torch.{function}() without device= lands on the CPU; add device={device}",
            )

    def _is_transfer(self, call: cst.Call, method: str) -> bool:
        if method in TRANSFER_METHODS:
            return True
        if method != "to" or len(call.args) != 1:
            return False
        arg = call.args[0]
        return (
            (arg.keyword is None or arg.keyword.value == "device")
            and isinstance(arg.value, cst.SimpleString)
            and arg.value.evaluated_value == "cpu"
        )

    def _is_transfer_receiver(self, call: cst.Call) -> bool:
        """``x.cpu()`` in ``x.cpu().numpy()``: the outer call is the one reported."""
        attribute = self.index.parent(call)
        outer = self.index.parent(attribute) if isinstance(attribute, cst.Attribute) else None
        return (
            isinstance(outer, cst.Call)
            and outer.func is attribute
            and self._is_transfer(outer, attribute.attr.value)
        )

    def _forward_input(self, node: cst.CSTNode) -> str:
        function = self.index.owner(node)
        if isinstance(function, cst.FunctionDef) and function.name.value == "forward":
            params = [p for p in function.params.params[1:] if p.star == ""]
            if params:
                return f"{params[0].name.value}.device"
        return "<input>.device"

    def _check_subscript(self, subscript: cst.Subscript) -> None:
        if any(isinstance(element.slice, cst.Slice) for element in subscript.slice):
            self._check_moving_slice(subscript)
            return
        if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
            return
        mask = subscript.slice[0].slice.value
        if self.step.region(subscript) is None or not self.facts.is_bool_mask(mask):
            return
        parent = self.index.parent(subscript)
        written = isinstance(parent, cst.AssignTarget) or (
            isinstance(parent, cst.AugAssign) and parent.target is subscript
        )
        if written:
            message = (
                "boolean-mask write has a data-dependent shape; use masked_fill_ / torch.where"
            )
        else:
            message = (
                "boolean-mask indexing has a data-dependent shape; use torch.where / masked_fill"
            )
        self.flag(subscript, DYNAMIC_SHAPE, message)

    def _check_moving_slice(self, subscript: cst.Subscript) -> None:
        start = self.step.moving_start(subscript)
        if start is not None:
            self.flag(
                subscript,
                MOVING_SLICE,
                f"slice start {code_of(start)} changes every step: one XLA graph per "
                "offset; slice on the CPU and move the batch",
            )

    def _check_control_flow(self, node) -> None:
        if self.step.region(node.test) is None or not self._truth_is_tensor(node.test):
            return
        keyword = CONTROL_FLOW[type(node)]
        self.flag(
            node,
            TENSOR_CONTROL_FLOW,
            f"Python {keyword} on a tensor value syncs with the host every step",
        )

    def _truth_is_tensor(self, test: cst.BaseExpression) -> bool:
        if isinstance(test, cst.BooleanOperation):
            return self._truth_is_tensor(test.left) or self._truth_is_tensor(test.right)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._truth_is_tensor(test.expression)
        return self.facts.is_tensor(test)


def _one_argument(call: cst.Call) -> bool:
    return len(call.args) == 1 and not call.args[0].star and call.args[0].keyword is None


def _dynamic_message(name: str) -> str:
    return f"{name} has a data-dependent shape: XLA recompiles for each new count"


def _transfer_label(method: str) -> str:
    return '.to("cpu")' if method == "to" else f".{method}()"
