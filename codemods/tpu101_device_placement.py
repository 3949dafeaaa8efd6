"""TPU101: every way a script picks or uses a CUDA device becomes the XLA device."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Union

import libcst as cst
from libcst.metadata import ParentNodeProvider, ScopeProvider

from migrate.fastcst.facts import FileFacts
from ._base import TORCH_XLA, Invalid, Safety, TpuCodemod, Valid, code_of, dotted_name, walk_all
from ._statements import AppliesStatementEdits, Replacement
from migrate.fastcst.traversal import visit_without_copying

# Calls whose truth means "the CUDA-class accelerator is there": the migrated script takes that path.
ACCELERATOR_TESTS = frozenset({"torch.cuda.is_available", "torch.accelerator.is_available"})
# Availability of a device the migration abandons; a flag made of it goes when its uses do.
FALLBACK_TESTS = frozenset({"torch.backends.mps.is_available"})
AVAILABILITY_TESTS = ACCELERATOR_TESTS | FALLBACK_TESTS
CURRENT_ACCELERATOR = "torch.accelerator.current_accelerator"
TORCH_DEVICE = "torch.device"
# torch functions whose first argument (or `device=`) is the device to use.
DEVICE_ARGUMENT_CALLS = frozenset({"torch.set_default_device"})
# torch functions whose first argument (or `device_type=`) must be a device type string.
DEVICE_TYPE_CALLS = frozenset({"torch.autocast", "torch.amp.autocast"})

CUDA_DEVICE = re.compile(r"cuda(:\d+)?")  # "cuda", "cuda:0"
CUDA_TEMPLATE = re.compile(r"cuda:(\{\w*\}|%[ds])")  # "cuda:{}".format(i), "cuda:%d" % i
FALLBACK_DEVICE = re.compile(r"(cpu|mps)(:\d+)?")
# Optimizer implementation options a script picks by asking whether the device is CUDA
# (``fused=device_type == "cuda"``, ``use_fused = fused_available and "cuda" in device``), and
# whether XLA tensors have them (measured with torch 2.9 + torch_xla 2.9 on XLA:CPU, Adam, AdamW,
# SGD): ``fused=True`` raises "`fused=True` requires all the params to be floating point Tensors
# of supported devices"; ``foreach=True`` runs (one graph per step, no CPU fallback, the for-loop's
# results). A decision about an option XLA lacks keeps asking about CUDA, so it is False on the
# XLA device as on the CPU; one about an option XLA has takes the XLA path like any device test.
KERNEL_OPTIONS = {"fused": False, "foreach": True}
XLA_LACKS = frozenset(option for option, on_xla in KERNEL_OPTIONS.items() if not on_xla)
# Constructors whose ``<option>=True`` for an option XLA lacks is dropped (torch's default then).
OPTIMIZERS = "torch.optim"
# Names (variables, attributes, keys, parameters, options) holding a device string contain this...
CONFIG_WORD = "device"
# ...except these, which hold something else (accelerate's placement map, not a torch device).
NOT_CONFIG_WORDS = ("device_map",)

# `.cuda(...)` arguments that only meant something for CUDA (the first positional is the GPU index).
CUDA_MOVE_KEYWORDS = frozenset({"device", "non_blocking"})
# Keywords dropped from `.to(<cuda>, ...)` together with the CUDA device.
DROPPED_MOVE_KEYWORDS = frozenset({"non_blocking"})
# Tensor methods whose `device=` takes a device object (the receiver's type is unknown statically).
TENSOR_DEVICE_METHODS = frozenset(
    {"to", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"}
)
# Statements after which the rest of their block never runs.
TERMINAL_STATEMENTS = (cst.Return, cst.Raise, cst.Break, cst.Continue)
# Expressions that never need parentheses to keep their meaning where another expression stood.
ATOMS = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.SimpleString,
    cst.FormattedString,
    cst.ConcatenatedString,
    cst.Integer,
    cst.Float,
    cst.Dict,
    cst.List,
    cst.Set,
    cst.Tuple,
)

# What a test becomes once the accelerator is known to be there: True/False when decided, a
# smaller expression when only part of it was about the accelerator, None when none of it was.
Verdict = Union[bool, cst.BaseExpression, None]

ELSE = "else"  # ChainDecision.taken: the `else:` arm of the chain


@dataclass
class Trace:
    """Nodes a collapse makes disappear: folded accelerator tests and dropped code."""

    folded: list = field(default_factory=list)
    dropped: list = field(default_factory=list)


@dataclass
class ChainDecision:
    """How an ``if``/``elif``/``else`` chain collapses."""

    kept: list  # (arm index, new test) of the arms that stay conditional, in order
    taken: Union[int, str, None]  # arm index (or ELSE) run when no kept arm is; None: nothing


def _is_cuda_device_text(text: str) -> bool:
    """A string that may name a CUDA device, or its start in a template (``f"cuda:{i}"``)."""
    return CUDA_DEVICE.fullmatch(text) is not None or text.startswith("cuda:")


class DevicePlacement(AppliesStatementEdits, TpuCodemod):
    """
    What it does
        Makes every device choice and device move in a PyTorch script use the XLA device.

        - ``torch.device("cuda"...)``, ``torch.accelerator.current_accelerator()`` and
          ``"cuda" if torch.cuda.is_available() else "cpu"`` become ``torch_xla.device()``
          (``current_accelerator().type`` becomes ``"xla"``). A choice that is also the
          user's keeps its test without the availability part: ``"cuda" if args.cuda else
          "cpu"`` becomes ``torch_xla.device() if args.cuda else torch.device("cpu")``, and a
          flag ``use_cuda = not args.no_cuda and torch.cuda.is_available()`` becomes
          ``use_cuda = not args.no_cuda``, its branches kept: ``--no-cuda`` still trains on
          the CPU.
        - ``.cuda(...)``, ``.to("cuda"...)`` and ``device="cuda"`` of torch calls become
          ``.to(device)`` / ``device=device``: the ``device`` variable where it is bound,
          ``self.device`` in a method of a class whose ``__init__`` sets it, else
          ``torch_xla.device()``. ``non_blocking`` goes with the CUDA device.
        - Branches on availability (``torch.cuda.is_available()``,
          ``torch.accelerator.is_available()`` and flags assigned from them, such as
          ``use_cuda``) collapse to the accelerator path: ``if`` bodies are inlined,
          ``elif``/``else`` fallbacks (mps, cpu) go, ``X if use_cuda else Y`` becomes ``X``,
          ``use_cuda and cond`` becomes ``cond``, an option read from a flag
          (``shuffle=has_gpu``) becomes ``True``, code after an inlined ``return`` goes, and a
          flag none of whose reads is left is removed. The comment lines right above a removed
          flag or ``if`` go with it unless the next statement follows it directly (see
          ``_statements``).
        - Device strings in configuration (variables, attributes, keys, parameters and
          ``--device`` options whose name contains "device") become ``"xla"``, and so do
          the "cuda" strings device-ish values are compared with. A variable that held
          ``"cuda" if ... else "cpu"`` now holds a device, so ``device == "cuda"`` becomes
          ``device.type == "xla"`` and ``torch.autocast(device_type=device)`` gets
          ``device.type``.
        - A choice that follows the configured device string keeps its test:
          ``device_type = "cuda" if "cuda" in device else "cpu"`` becomes
          ``"xla" if "xla" in device else "cpu"``, so ``--device=cpu`` still runs on the CPU.
        - Optimizer options XLA tensors lack (``KERNEL_OPTIONS``: ``fused``) are never asked
          for on XLA: ``fused=True`` of a ``torch.optim`` optimizer goes, and the device tests
          that decide them (``use_fused = fused_available and device_type == "cuda"``,
          ``fused=device.type == "cuda"``, ``dict(fused=True) if torch.cuda.is_available()
          else dict()``) keep asking about CUDA: False on the XLA device, as on the CPU.
          ``foreach``, which XLA runs, takes the XLA path like any device test.

    Why
        torch_xla 2.9 has no CUDA, and ``torch.cuda.is_available()`` and
        ``torch.accelerator.is_available()`` are False on a TPU host: an unmigrated script
        silently trains on the CPU. ``.cuda()`` and ``.to("cuda")`` fail outright.
        A fused optimizer over XLA parameters raises "`fused=True` requires all the params to
        be floating point Tensors of supported devices".

    Example
        Before::

            use_cuda = not args.no_cuda and torch.cuda.is_available()
            device = torch.device("cuda" if use_cuda else "cpu")
            model = Net().cuda()
            on_gpu = torch.cuda.is_available()
            loader = DataLoader(data, shuffle=on_gpu)

        After::

            use_cuda = not args.no_cuda
            device = torch_xla.device() if use_cuda else torch.device("cpu")
            model = Net().to(device)
            loader = DataLoader(data, shuffle=True)

    Left alone: ``torch.cuda.is_available()`` outside a branch or flag (``print(...)``), for
    TPU104 or a human; flags about the GPU count (``... and torch.cuda.device_count() > 1``);
    a choice whose accelerator arm is CUDA-only API (``torch.cuda.FloatTensor if use_cuda
    else torch.FloatTensor``); a file that defines its own ``cuda`` function or method or a
    ``Device`` class (its device handling is the user's own); the assignment of an attribute
    flag (``args.cuda = ...``), whose branches still collapse, since other modules may read it.
    """

    CODE = "TPU101"
    NAME = "device-placement"
    SUMMARY = "Choose and use the XLA device instead of CUDA/accelerator/CPU device selection"
    SAFETY = Safety.SEMANTIC
    TRIGGERS = ("cuda", "accelerator", *sorted(XLA_LACKS))

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses("torch") and (
            facts.calls("cuda")
            or facts.uses(*AVAILABILITY_TESTS, "torch.accelerator")
            or facts.has_string(_is_cuda_device_text)
            or (facts.uses(OPTIMIZERS) and facts.mentions(*XLA_LACKS))
        )

    VALID = [
        Valid(
            "import torch\n\n"
            'print("using cuda")\n'
            'logger.info("moving the model to cuda")\n'
            'stats = {"backend": "cuda", "count": 2}\n'
            'def describe():\n    """Runs on cuda when available."""\n    return "cuda"\n',
            why='the string "cuda" in messages, unrelated dict values and docstrings',
        ),
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
            "import torch\n\n"
            "print(torch.cuda.is_available())\n"
            "ok = torch.cuda.device_count() > 0\n"
            "if args.cuda:\n    print('asked for --cuda')\n",
            why="availability outside a branch or flag, and a plain --cuda option, stay",
        ),
        Valid(
            "import torch\n\n\n"
            "def cuda(tensor):\n"
            "    return tensor.cuda() if torch.cuda.is_available() else tensor\n\n\n"
            "x = cuda(torch.ones(2))\n",
            why="a user-defined cuda() helper: the file's device handling is the user's own",
        ),
        Valid(
            "import torch\n\n"
            "cuda = torch.cuda.is_available()\n"
            "Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n",
            why="the accelerator arm is CUDA-only API: a human picks the tensor type",
        ),
        Valid(
            "import torch\n\n"
            "multi_gpu = torch.cuda.is_available() and torch.cuda.device_count() > 1\n"
            "if multi_gpu:\n"
            "    model = torch.nn.DataParallel(model)\n",
            why="a flag about the GPU count is not an availability flag",
        ),
        Valid(
            "import torch\n\n"
            "if torch.backends.mps.is_available():\n"
            '    device = torch.device("mps")\n'
            "x = torch.ones(2).to(torch.float16)\n",
            why="mps-only selection and dtype moves are not CUDA",
        ),
        Valid(
            "import inspect\n\nimport torch\n\n\n"
            "def configure_optimizers(params, lr, device_type):\n"
            "    fused_available = 'fused' in inspect.signature(torch.optim.AdamW).parameters\n"
            "    use_fused = fused_available and device_type == 'cuda'\n"
            "    extra_args = dict(fused=True) if use_fused else dict()\n"
            "    return torch.optim.AdamW(params, lr=lr, **extra_args)\n",
            why="nanoGPT's fused decision keeps asking about CUDA: False on XLA as on the CPU "
            "(XLA tensors have no fused kernel)",
        ),
        Valid(
            "import torch\n\n"
            "opt = torch.optim.AdamW(params, fused=False)\n"
            "sgd = torch.optim.SGD(params, lr=0.1, fused=args.fused)\n"
            "norm = FusedLayerNorm(64, fused=True)\n",
            why="fused off, a user's choice, and a fused= of something that is not torch.optim",
        ),
        Valid(
            "import torch\n\n"
            "device = 'xla'\n"
            "device_type = 'xla' if 'xla' in device else 'cpu'\n"
            "dev = torch.device('cpu' if args.device == 'cpu' else 'xla')\n",
            why="device-type derivations that already follow the XLA device string",
        ),
    ]

    INVALID = [
        Invalid(
            "import torch\n\n"
            "use_gpu = args.use_gpu and torch.cuda.is_available()\n"
            "if use_gpu:\n"
            "    if args.rank >= 0:\n"
            "        torch.cuda.set_device(args.rank)\n"
            '    device = torch.device("cuda", args.rank)\n'
            "else:\n"
            '    device = torch.device("cpu")\n',
            "import torch\n"
            "import torch_xla\n\n"
            "use_gpu = args.use_gpu\n"
            "if use_gpu:\n"
            "    if args.rank >= 0:\n"
            "        torch.cuda.set_device(args.rank)\n"
            "    device = torch_xla.device()\n"
            "else:\n"
            '    device = torch.device("cpu")\n',
            why="dlrm: a user choice kept, an arm holding a nested if (TPU104 maps set_device)",
        ),
        Invalid(
            "import torch\n\n"
            "has_gpu = torch.cuda.is_available()\n"
            "loader = DataLoader(ds, batch_size=64, shuffle=has_gpu, pin_memory=has_gpu)\n",
            "import torch\n\n"
            "loader = DataLoader(ds, batch_size=64, shuffle=True, pin_memory=True)\n",
            why="an option read from an availability flag is the accelerator's: shuffling stays "
            "on (the flag would be False on a TPU host); the flag goes with its last read",
        ),
        Invalid(
            "import torch\n\n"
            'a = torch.device("cuda")\n'
            "b = torch.device('cuda:0')\n"
            'c = torch.device(f"cuda:{rank}")\n'
            'd = torch.device("cuda", args.local_rank)\n'
            "e = torch.device('cuda:{}'.format(args.gpu))\n"
            'f = torch.device("cuda:" + str(rank))\n'
            'g = torch.device(type="cuda", index=0)\n'
            'h = torch.device("cpu")\n',
            "import torch\nimport torch_xla\n\n"
            "a = torch_xla.device()\n"
            "b = torch_xla.device()\n"
            "c = torch_xla.device()\n"
            "d = torch_xla.device()\n"
            "e = torch_xla.device()\n"
            "f = torch_xla.device()\n"
            "g = torch_xla.device()\n"
            'h = torch.device("cpu")\n',
            why="every CUDA torch.device spelling; the CPU device stays",
        ),
        Invalid(
            "import torch\n\n"
            "use_cuda = not args.no_cuda and torch.cuda.is_available()\n"
            'device = torch.device("cuda" if use_cuda else "cpu")\n'
            "kwargs = {'num_workers': 1, 'pin_memory': True} if use_cuda else {}\n",
            "import torch\n"
            "import torch_xla\n"
            "\n"
            "use_cuda = not args.no_cuda\n"
            'device = torch_xla.device() if use_cuda else torch.device("cpu")\n'
            "kwargs = {'num_workers': 1, 'pin_memory': True} if use_cuda else {}\n",
            why="old mnist: --no-cuda keeps its CPU path once the availability test goes",
        ),
        Invalid(
            "import torch\n\n"
            "# pick the device\n"
            "if torch.cuda.is_available():\n"
            '    device = torch.device("cuda")\n'
            "elif torch.backends.mps.is_available():\n"
            '    device = torch.device("mps")\n'
            "else:\n"
            '    device = torch.device("cpu")\n'
            "model = Net().to(device)\n",
            "import torch\nimport torch_xla\n\n"
            "# pick the device\n"
            "device = torch_xla.device()\n"
            "model = Net().to(device)\n",
            why="ladder with mps: the arms after the taken cuda arm disappear",
        ),
        Invalid(
            "import torch\n\n"
            "args.cuda = not args.no_cuda and torch.cuda.is_available()\n"
            "if args.cuda:\n"
            "    torch.cuda.manual_seed(args.seed)\n"
            "loader = DataLoader(ds, pin_memory=args.cuda)\n"
            "if args.cuda: model.cuda()\n",
            "import torch\n"
            "import torch_xla\n"
            "\n"
            "args.cuda = not args.no_cuda\n"
            "if args.cuda:\n"
            "    torch.cuda.manual_seed(args.seed)\n"
            "loader = DataLoader(ds, pin_memory=args.cuda)\n"
            "if args.cuda: model.to(torch_xla.device())\n",
            why="attribute flag: the availability test goes, the choice and its branches stay",
        ),
        Invalid(
            "import torch\n\n"
            "x = torch.zeros(3, device='cuda')\n"
            'y = torch.randn(2, 2, device=f"cuda:{i}").to("cuda:0")\n'
            'z = w.to(device="cuda", dtype=torch.float16)\n'
            'v = w.to("cuda", torch.bfloat16, non_blocking=True)\n',
            "import torch\nimport torch_xla\n\n"
            "x = torch.zeros(3, device=torch_xla.device())\n"
            "y = torch.randn(2, 2, device=torch_xla.device()).to(torch_xla.device())\n"
            "z = w.to(device=torch_xla.device(), dtype=torch.float16)\n"
            "v = w.to(torch_xla.device(), torch.bfloat16)\n",
            why="device= keywords and .to() without a `device` variable in scope",
        ),
        Invalid(
            "import torch\n\n"
            "device = torch.device('cuda')\n"
            "x = torch.zeros(3, device='cuda')\n"
            "model = Net().cuda()\n"
            "batch = batch.cuda(non_blocking=True)\n"
            "ema = ema.cuda(device=0)\n",
            "import torch\nimport torch_xla\n\n"
            "device = torch_xla.device()\n"
            "x = torch.zeros(3, device=device)\n"
            "model = Net().to(device)\n"
            "batch = batch.to(device)\n"
            "ema = ema.to(device)\n",
            why="with a `device` variable the moves use it",
        ),
        Invalid(
            "import torch\n\n"
            "# I/O\n"
            "device = 'cuda'  # examples: 'cpu', 'cuda', 'cuda:0', 'cuda:1' etc., or try 'mps'\n"
            "if ddp:\n"
            "    device = f'cuda:{ddp_local_rank}'\n"
            "device_type = 'cuda' if 'cuda' in device else 'cpu'\n"
            "if device_type == 'cuda':\n"
            "    x = x.pin_memory().to(device, non_blocking=True)\n",
            "import torch\nimport torch_xla\n\n"
            "# I/O\n"
            "device = 'xla'  # examples: 'cpu', 'cuda', 'cuda:0', 'cuda:1' etc., or try 'mps'\n"
            "if ddp:\n"
            "    device = 'xla'\n"
            "device_type = 'xla' if 'xla' in device else 'cpu'\n"
            "if device_type == 'xla':\n"
            "    x = x.pin_memory().to(device, non_blocking=True)\n",
            why="nanoGPT config: strings become 'xla' in the user's quote style; the device type "
            "still follows the configured string (`--device=cpu` stays on the CPU)",
        ),
        Invalid(
            "import argparse\nimport torch\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])\n'
            "parser.add_argument('--train-device', type=str, default='cuda:0')\n"
            "parser.add_argument('--cuda', action='store_true', help='use cuda')\n"
            "args = parser.parse_args()\n"
            'if args.device.startswith("cuda"):\n'
            "    torch.backends.cudnn.benchmark = True\n",
            "import argparse\nimport torch\nimport torch_xla\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--device", default="xla", choices=["xla", "cpu"])\n'
            "parser.add_argument('--train-device', type=str, default='xla')\n"
            "parser.add_argument('--cuda', action='store_true', help='use cuda')\n"
            "args = parser.parse_args()\n"
            'if args.device.startswith("xla"):\n'
            "    torch.backends.cudnn.benchmark = True\n",
            why="argparse device options; a --cuda store_true flag stays",
        ),
        Invalid(
            "import torch\n\n"
            "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            "if device == 'cuda':\n"
            "    torch.cuda.synchronize()\n"
            "with torch.autocast(device_type=device, dtype=torch.bfloat16):\n"
            "    loss = model(x.to(device))\n"
            'print(f"trained on {device}")\n',
            "import torch\nimport torch_xla\n\n"
            "device = torch_xla.device()\n"
            "if device.type == 'xla':\n"
            "    torch.cuda.synchronize()\n"
            "with torch.autocast(device_type=device.type, dtype=torch.bfloat16):\n"
            "    loss = model(x.to(device))\n"
            'print(f"trained on {device}")\n',
            why="a device string that becomes a device: string uses of it go through .type",
        ),
        Invalid(
            "import torch\n\n"
            "device = torch.accelerator.current_accelerator().type"
            ' if torch.accelerator.is_available() else "cpu"\n'
            "kind = torch.accelerator.current_accelerator().type\n"
            "dev = (\n"
            "    torch.accelerator.current_accelerator()\n"
            "    if torch.accelerator.is_available()\n"
            '    else torch.device("cpu")\n'
            ")\n",
            "import torch\nimport torch_xla\n\n"
            'device = "xla"\n'
            'kind = "xla"\n'
            "dev = torch_xla.device()\n",
            why="torch.accelerator (PyTorch tutorials)",
        ),
        Invalid(
            "import torch\n\n"
            "def setup(args):\n"
            "    use_cuda = torch.cuda.is_available()\n"
            "    print('cuda:', use_cuda)\n"
            "    if use_cuda:\n"
            "        torch.backends.cudnn.benchmark = True\n"
            "    num_workers = 4 if use_cuda else 0\n"
            "    return num_workers\n",
            "import torch\n\n"
            "def setup(args):\n"
            "    use_cuda = torch.cuda.is_available()\n"
            "    print('cuda:', use_cuda)\n"
            "    torch.backends.cudnn.benchmark = True\n"
            "    num_workers = 4\n"
            "    return num_workers\n",
            why="a flag still read elsewhere keeps its assignment",
        ),
        Invalid(
            "import torch\n\n\n"
            "def main(args):\n"
            "    # pick the device\n"
            "    use_cuda = torch.cuda.is_available()\n"
            "    device = torch.device('cuda' if use_cuda else 'cpu')\n"
            "    return device\n",
            "import torch\n"
            "import torch_xla\n\n\n"
            "def main(args):\n"
            "    # pick the device\n"
            "    device = torch_xla.device()\n"
            "    return device\n",
            why="the comment of a removed flag that the next statement follows directly stays",
        ),
        Invalid(
            "import torch\n\n\n"
            "def to_device(batch):\n"
            "    return [t.cuda() for t in batch]\n\n\n"
            'device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")\n'
            'if device.type == "cuda":\n'
            "    torch.backends.cudnn.benchmark = True\n",
            "import torch\nimport torch_xla\n\n\n"
            "def to_device(batch):\n"
            "    return [t.to(device) for t in batch]\n\n\n"
            "device = torch_xla.device()\n"
            'if device.type == "xla":\n'
            "    torch.backends.cudnn.benchmark = True\n",
            why="module-level device seen from a function; device comparison takes the XLA path",
        ),
        Invalid(
            "import torch\n\n"
            "use_cuda = torch.cuda.is_available()\n"
            "device = torch.device('cuda' if use_cuda else 'cpu')\n"
            "opt = torch.optim.AdamW(params, fused=use_cuda)\n"
            "extra = {'fused': True} if use_cuda else {}\n"
            "name = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            "adam = torch.optim.Adam(params, fused=name == 'cuda')\n",
            "import torch\nimport torch_xla\n\n"
            "use_cuda = torch.cuda.is_available()\n"
            "device = torch_xla.device()\n"
            "opt = torch.optim.AdamW(params, fused=use_cuda)\n"
            "extra = {'fused': True} if use_cuda else {}\n"
            "name = torch_xla.device()\n"
            "adam = torch.optim.Adam(params, fused=name.type == 'cuda')\n",
            why="an availability flag read by a fused decision stays (False on a TPU host); a "
            "device string now a device is asked through .type",
        ),
        Invalid(
            "import torch\n\n"
            "dev = torch.device('cuda' if args.device == 'cuda' else 'cpu')\n"
            "device_type = 'cpu' if device == 'cpu' else 'cuda'\n"
            'kind = "cuda" if cfg.device.startswith("cuda") else "cpu"\n'
            "rank_device = f'cuda:{rank}' if 'cuda' in str(device) else 'cpu'\n"
            "x = x.to('cuda' if args.device != 'cpu' else 'cpu')\n"
            "y = torch.device('cuda') if args.device.type in ('cuda', 'mps')"
            " else torch.device('cpu')\n",
            "import torch\nimport torch_xla\n\n"
            "dev = torch.device('xla' if args.device == 'xla' else 'cpu')\n"
            "device_type = 'cpu' if device == 'cpu' else 'xla'\n"
            'kind = "xla" if cfg.device.startswith("xla") else "cpu"\n'
            "rank_device = 'xla' if 'xla' in str(device) else 'cpu'\n"
            "x = x.to('xla' if args.device != 'cpu' else 'cpu')\n"
            "y = torch_xla.device() if args.device.type in ('xla', 'mps')"
            " else torch.device('cpu')\n",
            why="choices that follow a configured device string keep their test: an explicit "
            "CPU choice still runs on the CPU",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._active = False  # the file imports torch and has no cuda API of its own
        self._flag_uses: set[int] = set()  # ids of Names that read an accelerator flag
        self._flag_attributes: set[str] = set()  # dotted attribute flags, e.g. "args.cuda"
        self._retyped_uses: set[int] = set()  # ids of Names of a device string now a device
        self._kernel_decisions: set[int] = set()  # ids of nodes deciding an option XLA lacks
        self._removable_flags: set[int] = set()  # ids of statement lines that can go
        self._inlined: set[int] = set()  # ids of if-branch bodies that become straight-line code
        self._self_device_lines: dict[int, Optional[int]] = {}
        self._flag_arguments: set[int] = set()  # ids of flag reads passed as an option
        # ids of flag values that join the user's choice to an availability test: the test goes,
        # the choice stays (``use_cuda = not args.no_cuda``)
        self._choice_flag_values: set[int] = set()
        self._kept_choices: set[int] = set()  # ids of device choices whose test stays

    # ----------------------------------------------------------------- analysis
    def visit_Module(self, node: cst.Module) -> bool:
        if not self.imports_module("torch"):
            return False
        collector = _Collector()
        visit_without_copying(node, collector)
        self._active = not collector.defines_cuda_api
        if not self._active:
            return False
        self._kernel_decisions = self._find_kernel_decisions(collector)
        self._find_flags(collector.assignments, collector.stored_attributes)
        trace = Trace()
        for head in collector.ifs:
            if not self._is_elif(head):
                self._trace_if_chain(head, trace)
        for ifexp in collector.ifexps:
            self._trace_ifexp(ifexp, trace)
        # ``DataLoader(..., shuffle=has_gpu)``: an option read from a flag is the accelerator's
        self._flag_arguments = {
            id(arg.value)
            for arg in collector.keyword_args
            if self._is_accelerator_test(arg.value) and not isinstance(arg.value, cst.Call)
        }
        trace.folded += [
            arg.value for arg in collector.keyword_args if id(arg.value) in self._flag_arguments
        ]
        self._removable_flags = self._flags_without_uses(collector.assignments, trace)
        self._retyped_uses = self._find_retyped(collector.assignments)
        return True

    def _find_kernel_decisions(self, collector: "_Collector") -> set[int]:
        """Ids of the nodes of what decides an option XLA lacks (``fused``): the value of a
        ``fused=`` argument, of an assignment to a name, attribute or key that says it
        (``use_fused = ...``, ``kwargs["fused"] = ...``) or of such a dict entry; the test of
        ``X if <test> else Y`` when an arm sets the option (``dict(fused=True) if ... else
        dict()``), and of an ``if <test>:`` whose body is simple statements that all set it."""
        roots = [arg.value for arg in collector.keyword_args if _lacking_option(arg.keyword.value)]
        roots += [
            element.value
            for element in collector.dict_elements
            if _lacking_option(_string_value(element.key) or "")
        ]
        roots += [
            value
            for target, value in collector.assigned
            if _lacking_option(_target_name(target) or "")
        ]
        roots += [
            ifexp.test
            for ifexp in collector.ifexps
            if _sets_lacking_option(ifexp.body) or _sets_lacking_option(ifexp.orelse)
        ]
        for node in collector.ifs:
            statements = _statements(node.body)
            if (
                statements
                and all(type(statement) is cst.SimpleStatementLine for statement in statements)
                and all(_sets_lacking_option(statement) for statement in statements)
            ):
                roots.append(node.test)
        return {id(node) for root in roots for node in walk_all(root)}

    def _in_kernel_decision(self, node: cst.CSTNode) -> bool:
        return id(node) in self._kernel_decisions

    def _find_flags(self, assignments, stored_attributes) -> None:
        """Flags are names or attributes assigned a boolean made of availability tests (not
        ``use_fused = torch.cuda.is_available()``, which decides an option XLA lacks)."""
        accelerator_assignments = set()
        for line, target, value in assignments:
            kind = self._availability_kind(value)
            if kind != "accelerator" or self._in_kernel_decision(value):
                continue
            if _joins_a_choice(value):  # ``not args.no_cuda and torch.cuda.is_available()``
                self._choice_flag_values.add(id(value))
                continue
            if isinstance(target, cst.Name):
                accelerator_assignments.update(self._scope_assignments(target))
            elif stored_attributes.get(dotted_name(target), 0) == 1:
                self._flag_attributes.add(dotted_name(target))
        for assignment in accelerator_assignments:
            for access in assignment.references:
                if set(access.referents) <= accelerator_assignments:
                    self._flag_uses.add(id(access.node))

    def _find_retyped(self, assignments) -> set[int]:
        """Reads of a name assigned ``"cuda" if ... else "cpu"``: a string that becomes
        ``torch_xla.device()``, so string operations on it need its ``.type``."""
        retyped = set()
        for line, target, value in assignments:
            if isinstance(target, cst.Name) and isinstance(value, cst.IfExp):
                arm = self._device_choice(value)
                if (
                    arm is not None
                    and _cuda_literal(arm) is not None
                    and not self._wants_device_string(value)
                ):
                    retyped.update(self._scope_assignments(target))
        return {
            id(access.node)
            for assignment in retyped
            for access in assignment.references
            if set(access.referents) <= retyped
        }

    def _availability_kind(self, value: cst.BaseExpression) -> Optional[str]:
        """The kind of flag ``value`` makes: "accelerator" or "fallback" when it is made of
        availability tests joined by and/or (never negated) and calls nothing else; else None.
        (``torch.cuda.device_count() > 1`` makes a multi-GPU flag, not an availability one.)"""
        if not _only_calls(value, lambda call: self.is_name(call.func, *AVAILABILITY_TESTS)):
            return None
        kinds = set()
        stack = [value]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.BooleanOperation):
                stack += [node.left, node.right]
            elif isinstance(node, cst.Call) and self.is_name(node.func, *ACCELERATOR_TESTS):
                kinds.add("accelerator")
            elif isinstance(node, cst.Call) and self.is_name(node.func, *FALLBACK_TESTS):
                kinds.add("fallback")
        if "accelerator" in kinds:
            return "accelerator"
        return "fallback" if kinds else None

    def _scope_assignments(self, target: cst.Name) -> list:
        try:
            scope = self.get_metadata(ScopeProvider, target)
        except KeyError:
            return []
        if scope is None:
            return []
        return [a for a in scope.assignments[target.value] if getattr(a, "node", None) is target]

    def _flags_without_uses(self, assignments, trace: Trace) -> set[int]:
        """Statement lines assigning a name flag whose reads all go with the collapse (a flag
        nobody reads is not this rule's business)."""
        gone = {id(node) for node in trace.folded}
        for root in trace.dropped:
            gone.update(id(node) for node in walk_all(root))
        removable = set()
        for line, target, value in assignments:
            if not isinstance(target, cst.Name) or self._availability_kind(value) is None:
                continue
            scope_assignments = self._scope_assignments(target)
            reads = [access.node for a in scope_assignments for access in a.references]
            if reads and all(id(read) in gone for read in reads):
                removable.add(id(line))
        return removable

    def _trace_if_chain(self, head: cst.If, trace: Trace) -> None:
        decision = self._decide_chain(head, head, trace)
        if decision is None or decision.kept or decision.taken is None:
            return
        arms, else_ = _chain(head)
        taken = else_ if decision.taken == ELSE else arms[decision.taken]
        self._inlined.add(id(taken.body))
        if _ends_terminal(taken.body):
            for sibling in self._following_siblings(head):
                trace.dropped.append(sibling)

    def _trace_ifexp(self, node: cst.IfExp, trace: Trace) -> None:
        if self._device_choice(node) is not None:
            trace.dropped.append(node)
            return
        verdict = self._ifexp_verdict(node, node, trace)
        if verdict is True:
            trace.dropped.append(node.orelse)
        elif verdict is False:
            trace.dropped.append(node.body)

    def _following_siblings(self, statement: cst.CSTNode) -> list:
        try:
            block = self.get_metadata(ParentNodeProvider, statement)
        except KeyError:
            return []
        body = list(getattr(block, "body", ()))
        for index, sibling in enumerate(body):
            if sibling is statement:
                return body[index + 1 :]
        return []

    def _is_elif(self, node: cst.If) -> bool:
        try:
            parent = self.get_metadata(ParentNodeProvider, node)
        except KeyError:
            return False
        return isinstance(parent, cst.If) and parent.orelse is node

    # ----------------------------------------------------------------- accelerator tests
    def _is_accelerator_test(self, node: cst.BaseExpression) -> bool:
        if self._in_kernel_decision(node):
            return False  # `fused=torch.cuda.is_available()` stays False on a TPU host
        if isinstance(node, cst.Call):
            return self.is_name(node.func, *ACCELERATOR_TESTS)
        if isinstance(node, cst.Name):
            return id(node) in self._flag_uses
        if isinstance(node, cst.Attribute):
            return dotted_name(node) in self._flag_attributes
        return False

    def _evaluate(self, original, updated, trace: Trace) -> Verdict:
        """Fold the accelerator tests in ``original`` to True; the residual is built from
        ``updated`` (the same shape, with the children's rewrites)."""
        if self._is_accelerator_test(original):
            trace.folded.append(original)
            return True
        if (
            isinstance(original, cst.UnaryOperation)
            and isinstance(original.operator, cst.Not)
            and isinstance(updated, cst.UnaryOperation)
        ):
            inner = self._evaluate(original.expression, updated.expression, trace)
            if inner is None or isinstance(inner, bool):
                return None if inner is None else not inner
            return updated.with_changes(expression=_keep_parentheses(inner, updated.expression))
        if isinstance(original, cst.BooleanOperation) and isinstance(updated, cst.BooleanOperation):
            return self._evaluate_boolean(original, updated, trace)
        return None

    def _evaluate_boolean(self, original, updated, trace: Trace) -> Verdict:
        left = self._evaluate(original.left, updated.left, trace)
        right = self._evaluate(original.right, updated.right, trace)
        if left is None and right is None:
            return None
        absorbing = isinstance(original.operator, cst.Or)  # True decides `or`, False `and`
        if left is absorbing or right is absorbing:
            trace.dropped.append(original.right if left is absorbing else original.left)
            return absorbing
        sides = [
            updated.left if left is None else left,
            updated.right if right is None else right,
        ]
        remaining = [side for side in sides if not isinstance(side, bool)]
        if not remaining:
            return not absorbing
        if len(remaining) == 1:
            return _keep_parentheses(remaining[0], updated)
        return updated.with_changes(left=remaining[0], right=remaining[1])

    def _decide_chain(self, original: cst.If, updated: cst.If, trace: Trace):
        """How the chain collapses, or None when no test in it is about the accelerator."""
        original_arms, original_else = _chain(original)
        updated_arms, _ = _chain(updated)
        kept, taken, changed = [], ELSE if original_else is not None else None, False
        for index, (arm, new_arm) in enumerate(zip(original_arms, updated_arms)):
            verdict = self._evaluate(arm.test, new_arm.test, trace)
            if verdict is None:
                kept.append((index, new_arm.test))
                continue
            changed = True
            if verdict is False:
                trace.dropped += [arm.test, arm.body]
            elif verdict is True:
                taken = index
                trace.dropped += original_arms[index + 1 :]
                if original_else is not None:
                    trace.dropped.append(original_else)
                break
            else:
                kept.append((index, verdict))
        return ChainDecision(kept, taken) if changed else None

    # ----------------------------------------------------------------- devices
    def _cuda_device(self, node: cst.CSTNode) -> bool:
        """``node`` names the CUDA device: a "cuda" string, torch.device of one,
        current_accelerator(), or a cuda-vs-cpu choice."""
        if _cuda_literal(node) is not None:
            return True
        if isinstance(node, cst.Call):
            if self.is_name(node.func, CURRENT_ACCELERATOR):
                return True
            if self.is_name(node.func, TORCH_DEVICE):
                kind = _argument(node, 0, "type")
                return kind is not None and self._cuda_device(kind.value)
        if isinstance(node, cst.IfExp):
            return self._device_choice(node) is not None
        return False

    def _fallback_device(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.SimpleString):
            return FALLBACK_DEVICE.fullmatch(_string_value(node) or "") is not None
        if isinstance(node, cst.Call) and self.is_name(node.func, TORCH_DEVICE):
            kind = _argument(node, 0, "type")
            return kind is not None and self._fallback_device(kind.value)
        if isinstance(node, cst.IfExp):
            return self._fallback_device(node.body) and self._fallback_device(node.orelse)
        return False

    def _device_choice(self, node: cst.IfExp) -> Optional[cst.BaseExpression]:
        """The CUDA arm of ``"cuda" if <anything> else "cpu"`` (either order, any spelling),
        unless the test reads the configured device string (``_configured_choice``)."""
        arm = self._cuda_arm(node)
        if arm is None or self._device_string_test(node.test):
            return None
        return arm

    def _configured_choice(self, node: cst.IfExp) -> Optional[cst.BaseExpression]:
        """The CUDA arm of ``"cuda" if "cuda" in device else "cpu"``: a choice that follows
        the device string the user configured (``--device=cpu`` still picks the CPU)."""
        arm = self._cuda_arm(node)
        if arm is None or not self._device_string_test(node.test):
            return None
        return arm

    def _cuda_arm(self, node: cst.IfExp) -> Optional[cst.BaseExpression]:
        """The CUDA arm of ``"cuda" if <test> else "cpu"`` (either order, any spelling)."""
        if self._cuda_device(node.body) and self._fallback_device(node.orelse):
            return node.body
        if self._cuda_device(node.orelse) and self._fallback_device(node.body):
            return node.orelse
        return None

    def _device_string_test(self, test: cst.BaseExpression) -> bool:
        """``test`` compares a device string of the configuration with device names (``"cuda"
        in device``, ``args.device == "cpu"``, ``device.startswith("cuda")``) and asks nothing
        about the machine (no availability test, no flag made of one)."""
        nodes = list(walk_all(test))
        if any(
            self._is_accelerator_test(node)
            or (isinstance(node, cst.Call) and self.is_name(node.func, *AVAILABILITY_TESTS))
            for node in nodes
        ):
            return False
        return any(_compares_device_string(node) for node in nodes)

    def _device_for(self, node: cst.CSTNode) -> cst.BaseExpression:
        """How code at ``node`` names the XLA device: ``device`` once bound there,
        ``self.device`` in a method of a class whose ``__init__`` set it, else
        ``torch_xla.device()``."""
        if self._device_bound_before(node):
            return self.device_expression(node)
        if self._self_device_visible(node):
            return cst.parse_expression("self.device")
        return self._xla_device()

    def _xla_device(self) -> cst.Call:
        self.require_import(TORCH_XLA)
        return cst.Call(func=cst.parse_expression("torch_xla.device"))

    def _xla_string(self, literal: Optional[cst.BaseString]) -> cst.SimpleString:
        """The string "xla" in the quote style of ``literal`` (double quotes without one)."""
        self.require_import(TORCH_XLA)
        quote = getattr(literal, "quote", '"')[0]
        return cst.SimpleString(f"{quote}xla{quote}")

    def _device_bound_before(self, node: cst.CSTNode) -> bool:
        """``device`` (the base class policy) only when it is bound when ``node`` runs: a
        parameter, an enclosing scope's name, or an earlier assignment that reaches ``node``."""
        try:
            scope = self.get_metadata(ScopeProvider, node)
        except KeyError:
            return False
        if scope is None or "device" not in scope:
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
        not in, that does not survive as straight-line code, and whose chain does not bind
        ``device`` in every arm."""
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
                if head is None:
                    return False
                if id(current) not in self._inlined and not self._every_arm_binds(head):
                    return False
            current = parent
        return True

    def _ancestors(self, node: cst.CSTNode) -> list:
        ancestors, current = [], self._parent(node)
        while current is not None:
            ancestors.append(current)
            current = self._parent(current)
        return ancestors

    def _parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        try:
            return self.get_metadata(ParentNodeProvider, node)
        except KeyError:
            return None

    def _chain_head(self, arm: cst.CSTNode) -> Optional[cst.If]:
        while arm is not None and not (isinstance(arm, cst.If) and not self._is_elif(arm)):
            arm = self._parent(arm)
        return arm

    def _every_arm_binds(self, head: cst.If) -> bool:
        """Every arm of the chain, ``else`` included, assigns ``device`` at its top level."""
        arms, else_ = _chain(head)
        if else_ is None:
            return False
        return all(
            any(
                isinstance(small, cst.Assign)
                and any(dotted_name(t.target) == "device" for t in small.targets)
                for statement in _statements(arm.body)
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

    def _release_calls(self, root: cst.CSTNode) -> None:
        """Calls under ``root`` are going away: an import used by them alone
        (``from torch.cuda import is_available``, ``import warnings``) goes too at the end of
        the pipeline. ``import torch`` always stays."""
        for node in walk_all(root):
            if not isinstance(node, cst.Call):
                continue
            name = node.func
            while isinstance(name, cst.Attribute):
                name = name.value
            if isinstance(name, cst.Name) and (name is node.func or not self._is_torch(name)):
                self.release_binding(node.func)

    def _is_torch(self, node: cst.CSTNode) -> bool:
        return any(
            name == "torch" or name.startswith("torch.") for name in self.qualified_names(node)
        )

    def _torch_callee(self, func: cst.BaseExpression) -> bool:
        if isinstance(func, cst.Attribute) and func.attr.value in TENSOR_DEVICE_METHODS:
            return True
        return self._is_torch(func)

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
        for rewrite in (
            self._option_xla_lacks,
            self._cuda_method,
            self._move_to_cuda,
            self._device_argument,
            self._device_type_argument,
            self._device_option,
            self._device_startswith,
            self._device_keywords,
        ):
            result = rewrite(original_node, updated_node)
            if result is not updated_node:
                return result
        return updated_node

    def _option_xla_lacks(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """``torch.optim.AdamW(..., fused=True)`` -> ``torch.optim.AdamW(...)``: XLA tensors
        have no fused kernel (torch's default implementation runs instead)."""
        if not any(_lacking_true(arg) for arg in original.args):
            return updated
        if not self.may_be_under(original.func, OPTIMIZERS) or not any(
            name.startswith(OPTIMIZERS + ".") for name in self.qualified_names(original.func)
        ):
            return updated
        self.record_rewrite()
        return _with_args(
            updated,
            [new for old, new in zip(original.args, updated.args) if not _lacking_true(old)],
        )

    def _cuda_method(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """``x.cuda(gpu, non_blocking=True)`` -> ``x.to(device)``."""
        func = original.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "cuda"):
            return updated
        if isinstance(func.value, (cst.Name, cst.Attribute)) and self._is_torch(func.value):
            return updated  # torch.cuda itself, torch.Tensor.cuda(...), not a tensor method
        kept = [
            arg
            for index, arg in enumerate(updated.args)
            if not (
                (index == 0 and arg.keyword is None and not arg.star)
                or (arg.keyword is not None and arg.keyword.value in CUDA_MOVE_KEYWORDS)
            )
        ]
        device = cst.Arg(self._device_for(original))
        self.record_rewrite()
        return _with_args(
            updated.with_changes(func=updated.func.with_changes(attr=cst.Name("to"))),
            [device, *kept],
        )

    def _move_to_cuda(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """``x.to("cuda", non_blocking=True)`` -> ``x.to(device)``; other arguments stay."""
        func = original.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "to"):
            return updated
        target = _argument(original, 0, "device")
        if target is None or not self._cuda_device(target.value):
            return updated
        args = []
        for old, new in zip(original.args, updated.args):
            if old is target:
                args.append(new.with_changes(value=self._device_for(original)))
            elif not (old.keyword is not None and old.keyword.value in DROPPED_MOVE_KEYWORDS):
                args.append(new)
        self.record_rewrite()
        return _with_args(updated, args)

    def _device_argument(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """``torch.set_default_device("cuda")`` -> ``torch.set_default_device(device)``."""
        if not self.is_name(original.func, *DEVICE_ARGUMENT_CALLS):
            return updated
        target = _argument(original, 0, "device")
        if target is None or not self._cuda_device(target.value):
            return updated
        self.record_rewrite()
        device = self._device_for(original)
        return updated.with_changes(
            args=[
                new.with_changes(value=device) if old is target else new
                for old, new in zip(original.args, updated.args)
            ]
        )

    def _device_type_argument(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """``torch.autocast(device_type=device)`` where ``device`` now holds a device: its
        ``.type`` (autocast wants the string)."""
        if self.is_name(original.func, *DEVICE_TYPE_CALLS):
            target = _argument(original, 0, "device_type")
        else:
            target = next((arg for arg in original.args if _keyword(arg) == "device_type"), None)
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

    def _device_option(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """argparse ``--device`` options: a CUDA default and CUDA choices become "xla"."""
        func = original.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "add_argument"):
            return updated
        names = [_string_value(arg.value) or "" for arg in original.args if arg.keyword is None]
        names += [
            _string_value(arg.value) or "" for arg in original.args if _keyword(arg) == "dest"
        ]
        if not any(_is_config_name(name) for name in names):
            return updated
        args, changed = [], False
        for old, new in zip(original.args, updated.args):
            literal = _cuda_literal(old.value)
            if _keyword(old) == "default" and literal is not None:
                new, changed = new.with_changes(value=self._xla_string(literal)), True
            elif _keyword(old) == "choices" and isinstance(
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
        has_xla = any(_string_value(element.value) == "xla" for element in collection.elements)
        elements, changed = [], False
        for element in collection.elements:
            value = element.value
            if isinstance(value, cst.SimpleString) and _cuda_literal(value) is not None:
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
        func = original.func
        if self._in_kernel_decision(original):
            return updated  # `fused=device.startswith("cuda")`: False on XLA, as on the CPU
        if not (
            isinstance(func, cst.Attribute)
            and func.attr.value == "startswith"
            and _mentions_device(func.value)
            and len(original.args) == 1
            and isinstance(original.args[0].value, cst.SimpleString)
            and _string_value(original.args[0].value) == "cuda"
        ):
            return updated
        self.record_rewrite()
        xla = self._xla_string(original.args[0].value)
        if self._retyped(func.value):
            comparison = _type_comparison(updated.func.value, cst.Equal(), xla)
            return comparison.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        return updated.with_changes(args=[updated.args[0].with_changes(value=xla)])

    def _device_keywords(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """``device="cuda"``: a device for torch callees, the string "xla" for the user's own."""
        torch_callee = self._torch_callee(original.func)
        args, changed = [], False
        for old, new in zip(original.args, updated.args):
            keyword = _keyword(old)
            if keyword == "device" and torch_callee and self._cuda_device(old.value):
                new = new.with_changes(value=self._device_for(original))
                changed = True
            elif (
                not torch_callee
                and keyword is not None
                and _is_config_name(keyword)
                and _cuda_literal(old.value) is not None
            ):
                new = new.with_changes(value=self._xla_string(_cuda_literal(old.value)))
                changed = True
            args.append(new)
        if not changed:
            return updated
        self.record_rewrite()
        return updated.with_changes(args=args)

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

    # ----------------------------------------------------------------- choices and branches
    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        if not self._active:
            return updated_node
        cuda_arm = self._device_choice(original_node)
        if cuda_arm is not None:
            self.record_rewrite()
            kept = self._kept_choice(original_node, updated_node, cuda_arm)
            if kept is not None:
                return kept
            self._release_calls(original_node)
            if self._wants_device_string(original_node):
                return self._xla_string(_cuda_literal(cuda_arm))
            return self._xla_device()
        configured_arm = self._configured_choice(original_node)
        if configured_arm is not None:
            return self._configured_xla_arm(original_node, updated_node, configured_arm)
        trace = Trace()
        verdict = self._ifexp_verdict(original_node, updated_node, trace)
        if verdict is None:
            return updated_node
        self.record_rewrite()
        for gone in [*trace.folded, *trace.dropped]:
            self._release_calls(gone)
        if not isinstance(verdict, bool):
            return updated_node.with_changes(test=verdict)
        chosen, original_chosen = (
            (updated_node.body, original_node.body)
            if verdict
            else (updated_node.orelse, original_node.orelse)
        )
        if self._cuda_device(original_chosen):
            return self._xla_device()
        return _keep_parentheses(chosen, updated_node)

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
            xla: cst.BaseExpression = self._xla_string(_cuda_literal(cuda_arm))
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

    def _configured_xla_arm(self, original: cst.IfExp, updated: cst.IfExp, arm) -> cst.IfExp:
        """``"cuda" if "cuda" in device else "cpu"`` -> ``"xla" if "xla" in device else "cpu"``
        (the comparison is rewritten on its own; a ``torch.device("cuda")`` arm is already
        ``torch_xla.device()``)."""
        literal = _cuda_literal(arm)
        if literal is None:
            return updated
        field = "body" if arm is original.body else "orelse"
        old = getattr(updated, field)
        self.record_rewrite()
        xla = self._xla_string(literal).with_changes(lpar=old.lpar, rpar=old.rpar)
        return updated.with_changes(**{field: xla})

    def _ifexp_verdict(self, original: cst.IfExp, updated: cst.IfExp, trace: Trace) -> Verdict:
        """The test's verdict, unless the arm it picks is CUDA-only API
        (``torch.cuda.FloatTensor if use_cuda else torch.FloatTensor``): a human picks then."""
        scratch = Trace()
        verdict = self._evaluate(original.test, updated.test, scratch)
        if isinstance(verdict, bool):
            chosen = original.body if verdict else original.orelse
            if any(
                name.startswith("torch.cuda.")
                for node in walk_all(chosen)
                for name in self.qualified_names(node)
            ):
                return None
        trace.folded += scratch.folded
        trace.dropped += scratch.dropped
        return verdict

    def _wants_device_string(self, node: cst.IfExp) -> bool:
        """A device choice assigned to a ``*type*`` name or given as a ``default=`` is
        configuration: it becomes "xla", not a device object."""
        try:
            parent = self.get_metadata(ParentNodeProvider, node)
        except KeyError:
            return False
        if isinstance(parent, cst.Arg):
            return _keyword(parent) == "default" or "type" in (_keyword(parent) or "")
        if isinstance(parent, cst.Assign):
            return any("type" in (_target_name(t.target) or "") for t in parent.targets)
        if isinstance(parent, cst.AnnAssign):
            return "type" in (_target_name(parent.target) or "")
        return False

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        if not self._active or self._is_elif(original_node):
            return updated_node
        trace = Trace()
        decision = self._decide_chain(original_node, updated_node, trace)
        if decision is None:
            return self._merge_identical_arms(original_node, updated_node)
        self.record_rewrite()
        for gone in [*trace.folded, *trace.dropped]:
            self._release_calls(gone)
        arms, else_ = _chain(updated_node)
        if decision.kept:
            return self._rebuild_chain(updated_node, arms, else_, decision)
        if decision.taken is None:
            self.edits.remove(original_node)
            return updated_node
        taken = else_ if decision.taken == ELSE else arms[decision.taken]
        leading = list(updated_node.leading_lines)
        if taken is not updated_node:
            leading += taken.leading_lines
        replacement = _inline_block(taken.body, leading)
        if replacement.ends_block:
            for unreachable in self._following_siblings(original_node):
                self._release_calls(unreachable)
        self.edits.replace(original_node, replacement)
        return updated_node

    def _rebuild_chain(self, head: cst.If, arms, else_, decision: ChainDecision) -> cst.If:
        if decision.taken == ELSE:
            tail = else_
        elif decision.taken is not None:
            taken = arms[decision.taken]
            tail = cst.Else(body=taken.body, leading_lines=taken.leading_lines)
        else:
            tail = None
        for index, test in reversed(decision.kept[1:]):
            tail = arms[index].with_changes(test=test, orelse=tail)
        first_index, first_test = decision.kept[0]
        first = arms[first_index].with_changes(test=first_test, orelse=tail)
        if first_index:
            first = first.with_changes(leading_lines=[*head.leading_lines, *first.leading_lines])
        return first

    def _merge_identical_arms(self, original: cst.If, updated: cst.If) -> cst.If:
        """``if args.gpu: device = <cuda:gpu> else: device = <cuda>`` became two identical
        arms: keep one. Only when this rule made them identical and the tests are plain."""
        arms, else_ = _chain(updated)
        original_arms, original_else = _chain(original)
        if else_ is None or not isinstance(else_, cst.Else):
            return updated
        bodies = [arm.body for arm in arms] + [else_.body]
        original_bodies = [arm.body for arm in original_arms] + [original_else.body]
        if not all(body.deep_equals(bodies[0]) for body in bodies[1:]):
            return updated
        if all(body.deep_equals(original_bodies[0]) for body in original_bodies[1:]):
            return updated
        if not all(_only_calls(arm.test, lambda call: False) for arm in original_arms):
            return updated
        if any(id(node) in self._flag_uses for arm in original_arms for node in walk_all(arm.test)):
            return updated
        self.record_rewrite()
        self.edits.replace(original, _inline_block(bodies[0], list(updated.leading_lines)))
        return updated

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if id(original_node) in self._removable_flags:
            self.record_rewrite()
            self._release_calls(original_node)
            self.edits.remove(original_node)
        return updated_node

    # ----------------------------------------------------------------- device strings
    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        if id(original_node.value) in self._choice_flag_values:
            trace = Trace()
            residual = self._evaluate(original_node.value, updated_node.value, trace)
            if residual is not None and not isinstance(residual, bool):
                self.record_rewrite()
                for gone in [*trace.folded, *trace.dropped]:
                    self._release_calls(gone)
                return updated_node.with_changes(value=residual)
        names = [_target_name(target.target) for target in original_node.targets]
        return self._config_value(names, original_node.value, updated_node, "value")

    def leave_AnnAssign(
        self, original_node: cst.AnnAssign, updated_node: cst.AnnAssign
    ) -> cst.AnnAssign:
        names = [_target_name(original_node.target)]
        return self._config_value(names, original_node.value, updated_node, "value")

    def leave_DictElement(
        self, original_node: cst.DictElement, updated_node: cst.DictElement
    ) -> cst.DictElement:
        names = [_string_value(original_node.key)]
        return self._config_value(names, original_node.value, updated_node, "value")

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        if id(original_node.value) not in self._flag_arguments:
            return updated_node
        self.record_rewrite()
        return updated_node.with_changes(value=cst.Name("True"))

    def leave_Param(self, original_node: cst.Param, updated_node: cst.Param) -> cst.Param:
        names = [original_node.name.value]
        return self._config_value(names, original_node.default, updated_node, "default")

    def _config_value(self, names, value, updated_node, attribute: str):
        """``device = "cuda"`` (any name containing "device") -> ``device = "xla"``."""
        if not self._active or value is None:
            return updated_node
        literal = _cuda_literal(value)
        if literal is None or not any(_is_config_name(name or "") for name in names):
            return updated_node
        self.record_rewrite()
        return updated_node.with_changes(**{attribute: self._xla_string(literal)})

    def leave_Comparison(
        self, original_node: cst.Comparison, updated_node: cst.Comparison
    ) -> cst.Comparison:
        """``device == "cuda"``, ``"cuda" in device``, ``device.type in ("cuda", ...)`` compare
        with "xla" so the accelerator path is taken."""
        if not self._active:
            return updated_node
        if self._in_kernel_decision(original_node):
            # `use_fused = device_type == "cuda"` keeps asking about CUDA: False on XLA and on
            # the CPU; a device string now a device is asked through its `.type`
            retyped = self._retyped_comparison(original_node, updated_node, keep_cuda=True)
            if retyped is None:
                return updated_node
            self.record_rewrite()
            return retyped
        retyped = self._retyped_comparison(original_node, updated_node)
        if retyped is not None:
            self.record_rewrite()
            return retyped
        operands = [original_node.left] + [t.comparator for t in original_node.comparisons]
        new_operands = [updated_node.left] + [t.comparator for t in updated_node.comparisons]
        changed = False
        for index, target in enumerate(original_node.comparisons):
            if not isinstance(target.operator, (cst.Equal, cst.NotEqual, cst.In, cst.NotIn)):
                continue
            for mine, other in ((index, index + 1), (index + 1, index)):
                if not _mentions_device(operands[other]):
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

    def _retyped_comparison(
        self, original: cst.Comparison, updated: cst.Comparison, keep_cuda: bool = False
    ):
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

    def _retyped(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Name) and id(node) in self._retyped_uses

    def _xla_compared(self, original, updated):
        """The string "cuda"/"cuda:0" -> "xla"/"xla:0"; in a tuple/list/set, each such one."""
        if isinstance(original, cst.SimpleString):
            value = _string_value(original)
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


class _Collector(cst.CSTVisitor):
    """One pass over the original tree: what the rule's decisions depend on."""

    def __init__(self) -> None:
        self.ifs: list[cst.If] = []
        self.ifexps: list[cst.IfExp] = []
        self.assignments: list = []  # (statement line, target, value) of one-target assignments
        self.assigned: list = []  # (target, value) of every assignment with a value
        self.keyword_args: list[cst.Arg] = []
        self.dict_elements: list[cst.DictElement] = []
        self.stored_attributes: dict[str, int] = {}  # dotted attribute -> assignments to it
        self.defines_cuda_api = False  # a `def cuda` or `class Device` of the user's own
        self._lines: list[cst.SimpleStatementLine] = []

    def visit_If(self, node: cst.If) -> None:
        self.ifs.append(node)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.ifexps.append(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.defines_cuda_api |= node.name.value == "cuda"

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.defines_cuda_api |= node.name.value == "Device"

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._lines.append(node)

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        self._lines.pop()

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._count_store(node.target)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.assigned += [(target.target, node.value) for target in node.targets]
        if len(node.targets) == 1:
            self._record(node.targets[0].target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._count_store(node.target)
        if node.value is not None:
            self.assigned.append((node.target, node.value))
            self._record(node.target, node.value)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.keyword_args.append(node)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self.dict_elements.append(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._count_store(node.target)

    def _count_store(self, target: cst.BaseExpression) -> None:
        dotted = dotted_name(target)
        if isinstance(target, cst.Attribute) and dotted:
            self.stored_attributes[dotted] = self.stored_attributes.get(dotted, 0) + 1

    def _record(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        line = self._lines[-1] if self._lines else None
        if line is not None and len(line.body) == 1 and dotted_name(target):
            self.assignments.append((line, target, value))


# --------------------------------------------------------------------- small helpers
def _only_calls(expression: cst.CSTNode, allowed) -> bool:
    """True when every call inside ``expression`` satisfies ``allowed`` (no side effects)."""
    return all(allowed(node) for node in walk_all(expression) if isinstance(node, cst.Call))


def _string_value(node: Optional[cst.CSTNode]) -> Optional[str]:
    if isinstance(node, cst.SimpleString) and "b" not in node.prefix.lower():
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _cuda_literal(node: Optional[cst.CSTNode]) -> Optional[cst.BaseString]:
    """The string literal of a CUDA device spelling ("cuda", "cuda:0", f"cuda:{i}",
    "cuda:" + str(i), "cuda:{}".format(i), "cuda:%d" % i), for its quote style; else None."""
    if isinstance(node, cst.SimpleString):
        return node if CUDA_DEVICE.fullmatch(_string_value(node) or "") else None
    if isinstance(node, cst.FormattedString) and node.parts:
        first, rest = node.parts[0], node.parts[1:]
        if not isinstance(first, cst.FormattedStringText):
            return None
        if (first.value == "cuda" and not rest) or (
            first.value == "cuda:"
            and rest
            and all(isinstance(part, cst.FormattedStringExpression) for part in rest)
        ):
            return node
        return None
    if isinstance(node, cst.BinaryOperation):
        left = _string_value(node.left) or ""
        if isinstance(node.operator, cst.Add) and left == "cuda:":
            return node.left
        if isinstance(node.operator, cst.Modulo) and CUDA_TEMPLATE.fullmatch(left):
            return node.left
        return None
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "format"
        and CUDA_TEMPLATE.fullmatch(_string_value(node.func.value) or "")
    ):
        return node.func.value
    return None


def _statements(block: cst.BaseSuite) -> list:
    if isinstance(block, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=block.body)]
    return list(block.body)


def _cuda_string(node: cst.CSTNode) -> bool:
    """A plain "cuda"/"cuda:N" string literal."""
    return CUDA_DEVICE.fullmatch(_string_value(node) or "") is not None


def _type_comparison(device, operator, xla: cst.SimpleString) -> cst.Comparison:
    """``<device>.type == "xla"`` (or ``!=``)."""
    return cst.Comparison(
        left=cst.Attribute(device, cst.Name("type")),
        comparisons=[cst.ComparisonTarget(operator, xla)],
    )


def _lacking_option(name: str) -> bool:
    """``name`` says an option XLA lacks: ``fused``, ``use_fused``, ``self.fused_adam``."""
    lowered = name.lower()
    return any(option in lowered for option in XLA_LACKS)


def _sets_lacking_option(node: cst.CSTNode) -> bool:
    """``node`` mentions an option XLA lacks: ``dict(fused=True)``, ``kw["fused"] = True``."""
    return any(
        (isinstance(child, cst.Name) and _lacking_option(child.value))
        or _lacking_option(_string_value(child) or "")
        for child in walk_all(node)
    )


def _lacking_true(arg: cst.Arg) -> bool:
    """``fused=True``: an option XLA lacks, asked for."""
    return (
        _keyword(arg) in XLA_LACKS and isinstance(arg.value, cst.Name) and arg.value.value == "True"
    )


def _compares_device_string(node: cst.CSTNode) -> bool:
    """``"cuda" in device``, ``args.device != "cpu"``, ``device.type in ("cuda", "mps")``,
    ``device.startswith("cuda")``."""
    if isinstance(node, cst.Comparison):
        operands = [node.left] + [target.comparator for target in node.comparisons]
        return any(map(_mentions_device, operands)) and any(map(_device_names, operands))
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "startswith"
        and node.args
    ):
        return _mentions_device(node.func.value) and _device_names(node.args[0].value)
    return False


def _device_names(node: cst.CSTNode) -> bool:
    """A device name ("cuda", "cuda:0", "cpu", "mps") or a tuple, list or set of them."""
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return bool(node.elements) and all(_device_names(e.value) for e in node.elements)
    value = _string_value(node) or ""
    return bool(CUDA_DEVICE.fullmatch(value) or FALLBACK_DEVICE.fullmatch(value))


def _is_config_name(name: str) -> bool:
    lowered = name.lower()
    return CONFIG_WORD in lowered and not any(word in lowered for word in NOT_CONFIG_WORDS)


def _mentions_device(node: cst.CSTNode) -> bool:
    """A device-ish expression: ``device``, ``args.device``, ``str(device)``, ``x.device.type``."""
    if not isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        return False
    return _is_config_name(code_of(node))


def _target_name(target: cst.CSTNode) -> Optional[str]:
    if isinstance(target, cst.Name):
        return target.value
    if isinstance(target, cst.Attribute):
        return target.attr.value
    if isinstance(target, cst.Subscript) and len(target.slice) == 1:
        index = target.slice[0].slice
        if isinstance(index, cst.Index):
            return _string_value(index.value)
    return None


def _keyword(arg: cst.Arg) -> Optional[str]:
    return arg.keyword.value if arg.keyword is not None else None


def _argument(call: cst.Call, position: int, keyword: str) -> Optional[cst.Arg]:
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    for arg in call.args:
        if _keyword(arg) == keyword:
            return arg
    return positional[position] if len(positional) > position else None


def _with_args(call: cst.Call, args: list) -> cst.Call:
    """``call`` with ``args``: commas between them, the original end (trailing comma, line
    break before the closing parenthesis) kept."""
    last = call.args[-1] if call.args else cst.Arg(cst.Name("_"))
    args = list(args)
    for index, arg in enumerate(args[:-1]):
        if arg.comma is cst.MaybeSentinel.DEFAULT:
            args[index] = arg.with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
    if args:
        args[-1] = args[-1].with_changes(
            comma=last.comma, whitespace_after_arg=last.whitespace_after_arg
        )
    return call.with_changes(args=args)


def _keep_parentheses(result: cst.BaseExpression, replaced: cst.BaseExpression):
    """``result`` stands where ``replaced`` stood: it inherits the parentheses it may need."""
    if replaced.lpar and not result.lpar and not isinstance(result, ATOMS):
        return result.with_changes(lpar=replaced.lpar, rpar=replaced.rpar)
    return result


def _chain(head: cst.If):
    """The arms of an if/elif chain and its ``else`` (or None)."""
    arms, node = [head], head.orelse
    while isinstance(node, cst.If):
        arms.append(node)
        node = node.orelse
    return arms, node


def _ends_terminal(block: cst.BaseSuite) -> bool:
    last = block.body[-1] if block.body else None
    if isinstance(block, cst.IndentedBlock):
        if not isinstance(last, cst.SimpleStatementLine):
            return False
        last = last.body[-1]
    return isinstance(last, TERMINAL_STATEMENTS)


def _inline_block(block: cst.BaseSuite, leading: list) -> Replacement:
    """The statements of ``block`` at the level of the statement it belonged to; its header
    comment goes above them and its footer comments below them."""
    if isinstance(block, cst.SimpleStatementSuite):
        line = cst.SimpleStatementLine(
            body=block.body, trailing_whitespace=block.trailing_whitespace
        )
        return Replacement((line,), tuple(leading), (), _ends_terminal(block))
    header = block.header.comment
    if header is not None:
        leading = [*leading, cst.EmptyLine(comment=header)]
    return Replacement(
        tuple(block.body), tuple(leading), tuple(block.footer), _ends_terminal(block)
    )


def _joins_a_choice(value: cst.BaseExpression) -> bool:
    """``<choice> and <availability>``: an ``and`` one of whose operands calls nothing (the
    user's option, ``not args.no_cuda``), the other being the availability test."""
    if not (isinstance(value, cst.BooleanOperation) and isinstance(value.operator, cst.And)):
        return False
    sides = [value.left, value.right]
    return any(not any(isinstance(n, cst.Call) for n in walk_all(side)) for side in sides)


def _as_torch_device(fallback: cst.BaseExpression) -> cst.BaseExpression:
    """The CPU arm of a kept choice as a device: ``"cpu"`` -> ``torch.device("cpu")``."""
    if isinstance(fallback, cst.SimpleString):
        return cst.Call(
            func=cst.Attribute(value=cst.Name("torch"), attr=cst.Name("device")),
            args=[cst.Arg(fallback.with_changes(lpar=[], rpar=[]))],
        )
    return fallback
