"""TPU145: a tensor built in ``forward`` from a tensor's size gets that tensor's device."""

from __future__ import annotations

import libcst as cst
from libcst.metadata.scope_provider import FunctionScope

from migrate.fastcst.facts import FileFacts
from ._base import Invalid, Safety, TpuCodemod, Valid, walk_all, with_keyword_argument
from ._loops import ModuleIndex
from ._step_code import StepCode
from ._tensors import TensorFacts

# torch functions that build a tensor from sizes or values and take ``device=``. The ``*_like``
# ones follow their argument already; ``torch.normal(mean, std)`` takes no ``device=``.
FACTORIES = frozenset(
    {"zeros", "ones", "empty", "full", "arange", "range", "linspace", "logspace", "rand",
     "randn", "randint", "randperm", "tensor", "as_tensor", "eye", "tril_indices",
     "triu_indices"}
)  # fmt: skip
# What, read from a tensor ``x`` in a factory's arguments, shows the new tensor is made for the
# same data: ``x.size(0)`` (a method), ``x.shape[1]``, ``x.dtype`` (attributes). ``len(x)`` is
# not one: ``x`` may be a list.
TENSOR_READ_METHODS = frozenset({"size"})
TENSOR_READ_ATTRIBUTES = frozenset({"shape", "dtype", "device"})


class FactoryDevices(TpuCodemod):
    """
    What it does
        In a ``forward`` method of an ``nn.Module`` class (and the functions of the file it
        calls), a ``torch.zeros/ones/empty/full/arange/rand/randn/randint/tensor/eye/...`` call
        without ``device=`` whose own arguments read a tensor ``x`` (``x.size(0)``,
        ``x.shape``, ``x.shape[1]``, ``x.dtype``, ``x.device``) gets ``device=x.device``. ``x``
        is a plain name bound in the function (a parameter or a local) and known to be a
        tensor (an input of ``forward``, the result of a torch call or a layer).

        Left alone: calls that pass ``device=`` or ``**kwargs``, calls moved at once
        (``.to(...)``, ``.cuda()``, ``.type_as(...)``), ``*_like`` factories (they follow
        their argument), factories whose arguments read no tensor (``torch.tensor(0.5)``,
        ``torch.zeros(n)``: TPU117 reports them as TPU254), and code outside the forward pass
        (a Dataset's ``__getitem__`` or a collate function, where a CPU tensor is right).

    Why
        A factory without ``device=`` creates a CPU tensor. On the CPU that is where the
        inputs are too; on XLA, the hidden state of an RNN cell built as
        ``torch.zeros(input.size(0), 51)`` meets XLA inputs and the step fails with a device
        mismatch (or the tensor is uploaded on every call). ``device=x.device`` is the device
        of the data the tensor is sized for: the CPU where the original ran, the XLA device
        after the migration, the CPU again for an input deliberately kept there
        (``lengths`` for ``pack_padded_sequence``). Random factories then draw from the XLA
        generator rather than the CPU one, which is why the rule is not "safe".

    Example
        Before::

            def forward(self, input):
                h_t = torch.zeros(input.size(0), 51, dtype=torch.double)

        After::

            def forward(self, input):
                h_t = torch.zeros(input.size(0), 51, dtype=torch.double, device=input.device)
    """

    CODE = "TPU145"
    NAME = "factory-devices"
    SUMMARY = "A tensor built in forward from an input's size gets that input's device"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("forward",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.mentions("forward") and facts.defines_subclass_of("torch.nn")

    VALID = [
        Valid(
            "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
            "    def forward(self, x):\n"
            "        h = torch.zeros(x.size(0), 4, device=x.device)\n"
            "        n = torch.arange(x.size(1)).to(x.device)\n"
            "        return torch.zeros_like(x) + h.sum() + n.sum()\n",
            why="already on a device: device= given, moved at once, or a *_like factory",
        ),
        Valid(
            "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
            "    def forward(self, x, steps):\n"
            "        scale = torch.tensor(0.5)\n        h = torch.zeros(len(x), 4)\n"
            "        t = torch.ones(steps, 4)\n        return x * scale + h + t\n",
            why="no tensor read in the arguments (len() may be of a list): TPU117's TPU254",
        ),
        Valid(
            "import torch\nfrom torch.utils.data import Dataset\n\n\nclass Pairs(Dataset):\n"
            "    def __getitem__(self, i):\n        x = self.data[i]\n"
            "        return x, torch.zeros(x.size(0))\n\n\n"
            "def collate(batch):\n    x = torch.stack(batch)\n"
            "    return x, torch.ones(x.shape[0])\n",
            why="a Dataset and a collate function build CPU tensors, rightly: not forward",
        ),
        Valid(
            "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
            "    def forward(self, x):\n"
            "        h = torch.zeros(self.hidden.size(0), 4)\n"
            "        w = torch.zeros([t.size(0) for t in x.unbind(0)])\n"
            "        return x + h + w\n",
            why="only a plain name bound in the function: not self.hidden, not a loop variable",
        ),
        Valid(
            "import numpy as np\nimport torch\nimport torch.nn as nn\n\n\n"
            "class Net(nn.Module):\n    def forward(self, x):\n"
            "        table = np.ones((4, 4))\n"
            "        return x + torch.zeros(table.shape)\n",
            why="the name read is a NumPy array, not a tensor: it has no device to follow",
        ),
        Valid(
            "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
            "    def forward(self, x, **options):\n"
            "        return x + torch.zeros(x.shape, **options)\n",
            why="**kwargs may hold device=",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nimport torch.nn as nn\n\n\nclass Sequence(nn.Module):\n"
            "    def forward(self, input, future=0):\n"
            "        h_t = torch.zeros(input.size(0), 51, dtype=torch.double)\n"
            "        c_t = torch.zeros(\n            input.size(0),\n            51,\n        )\n"
            "        return self.cell(input, (h_t, c_t))\n",
            "import torch\nimport torch.nn as nn\n\n\nclass Sequence(nn.Module):\n"
            "    def forward(self, input, future=0):\n"
            "        h_t = torch.zeros(input.size(0), 51, dtype=torch.double, "
            "device=input.device)\n"
            "        c_t = torch.zeros(\n            input.size(0),\n            51,\n"
            "            device=input.device,\n        )\n"
            "        return self.cell(input, (h_t, c_t))\n",
            why="an RNN cell's hidden state sized by forward's input, in both argument layouts",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Embed(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.emb = nn.Embedding(10, 4)\n\n"
            "    def forward(self, ids):\n"
            "        emb = self.emb(ids)\n"
            "        pos = torch.arange(ids.shape[1] - 1)\n"
            "        mask = torch.ones(emb.shape, dtype=torch.bool)\n"
            "        noise = torch.randn(3, dtype=emb.dtype)\n"
            "        return self.bias(pos, mask) + noise.sum()\n\n"
            "    def bias(self, pos, mask):\n"
            "        return torch.tensor([pos.size(0), 1]) * mask\n",
            "import torch\nfrom torch import nn\n\n\nclass Embed(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.emb = nn.Embedding(10, 4)\n\n"
            "    def forward(self, ids):\n"
            "        emb = self.emb(ids)\n"
            "        pos = torch.arange(ids.shape[1] - 1, device=ids.device)\n"
            "        mask = torch.ones(emb.shape, dtype=torch.bool, device=emb.device)\n"
            "        noise = torch.randn(3, dtype=emb.dtype, device=emb.device)\n"
            "        return self.bias(pos, mask) + noise.sum()\n\n"
            "    def bias(self, pos, mask):\n"
            "        return torch.tensor([pos.size(0), 1], device=pos.device) * mask\n",
            why="shape, shape[i], dtype of an input or a local layer output, and in a method "
            "forward calls",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._devices: dict[int, str] = {}  # id(factory call) -> the name whose device it takes

    def visit_Module(self, node: cst.Module) -> bool:
        index = ModuleIndex(self, node)
        facts = TensorFacts(self, index)
        step = StepCode(self, index, facts)
        for call in index.calls:
            if facts.torch_function(call.func) not in FACTORIES or not facts.lands_on_cpu(call):
                continue
            if step.region(call) != "forward":
                continue
            source = self._tensor_read(call, facts)
            if source is not None:
                self._devices[id(call)] = source
        return True

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        source = self._devices.get(id(original_node))
        if source is None:
            return updated_node
        self.record_rewrite()
        device = cst.Attribute(value=cst.Name(source), attr=cst.Name("device"))
        return with_keyword_argument(updated_node, "device", device)

    def _tensor_read(self, call: cst.Call, facts: TensorFacts) -> str | None:
        """The first name in ``call``'s arguments read for its size, dtype or device that is a
        tensor bound in the enclosing function."""
        for arg in call.args:
            for node in walk_all(arg.value):
                name = _read_of(node)
                if name is not None and self._local_tensor(name, facts):
                    return name.value
        return None

    def _local_tensor(self, name: cst.Name, facts: TensorFacts) -> bool:
        bound = self.bindings_of(name)
        return (
            bound is not None
            and isinstance(bound[0], FunctionScope)
            and facts.is_tensor_across_calls(name)
        )


def _read_of(node: cst.CSTNode) -> cst.Name | None:
    """``x`` for ``x.size(...)``, ``x.shape``, ``x.dtype``, ``x.device``; else None."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        attribute, methods = node.func, TENSOR_READ_METHODS
    elif isinstance(node, cst.Attribute):
        attribute, methods = node, TENSOR_READ_ATTRIBUTES
    else:
        return None
    if attribute.attr.value in methods and isinstance(attribute.value, cst.Name):
        return attribute.value
    return None
