"""TPU107: CUDA fp16 autocast becomes XLA bf16 autocast."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._amp import is_training_device_type
from ._base import ImportSpec, Invalid, Safety, TpuCodemod, Valid, code_of
from ._signatures import named_arguments

TORCH = ImportSpec("torch")
XLA_AUTOCAST = 'torch.autocast("xla", dtype=torch.bfloat16'

# autocast(device_type, dtype=None, enabled=True, cache_enabled=None)
DEVICE_AUTOCASTS = ("torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast")
DEVICE_AUTOCAST_PARAMETERS = ("device_type", "dtype", "enabled", "cache_enabled")
# torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)
CUDA_AUTOCASTS = ("torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast")
CUDA_AUTOCAST_PARAMETERS = ("enabled", "dtype", "cache_enabled")
# Keyword arguments the XLA autocast keeps (the dtype is always bf16).
KEPT_AUTOCAST_KEYWORDS = ("enabled", "cache_enabled")


class MixedPrecision(TpuCodemod):
    """
    What it does
        ``torch.cuda.amp.autocast(...)``, ``torch.autocast("cuda", ...)``,
        ``torch.amp.autocast(device_type="cuda")`` and ``torch.autocast(device_type=dt)`` with a
        device type held in a variable (``device.type``, ``device_type``) become
        ``torch.autocast("xla", dtype=torch.bfloat16)``; ``enabled=`` and ``cache_enabled=`` are
        kept, an fp16 (or any other) ``dtype`` becomes bf16. Autocast on an explicit ``"cpu"``
        is left alone. Works for ``with`` statements and decorators alike.

        The GradScaler that goes with fp16 autocast is removed by TPU137, split off from this
        rule: ``TPU107`` still names both in ``--select``, ``--ignore`` and suppressions.

    Why
        TPUs do mixed precision in bfloat16, which has float32's exponent range, and fp16 is not
        what the hardware is fast at. ``torch.autocast("xla", dtype=torch.bfloat16)`` works on
        every XLA device; ``torch_xla.amp.autocast`` crashes on non-TPU XLA devices in 2.9 and
        the ``XLA_USE_BF16`` environment variable is deprecated (it turns every float32 tensor
        into bf16, not just the autocast regions), so neither is emitted.

        Semantics changes: the autocast regions compute in bf16 instead of fp16 (about 3 decimal
        digits instead of 4, so losses differ from a CUDA fp16 run by ~1e-3 relative; compare
        with ``tpu-migrate verify --keep-autocast``).

    Example
        Before::

            with torch.cuda.amp.autocast(enabled=args.amp):
                loss = criterion(model(x), y)

        After::

            with torch.autocast("xla", dtype=torch.bfloat16, enabled=args.amp):
                loss = criterion(model(x), y)
    """

    CODE = "TPU107"
    NAME = "mixed-precision"
    SUMMARY = "CUDA fp16 autocast -> torch.autocast('xla', dtype=torch.bfloat16)"
    SAFETY = Safety.SEMANTIC
    NUMERICS = (
        "CUDA fp16 autocast becomes bf16: compare with --keep-autocast (bf16 tolerance); fp32 "
        "logic is unchanged"
    )
    TRIGGERS = ("autocast",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.mentions("autocast")

    VALID = [
        Valid(
            "import torch\n\nwith torch.autocast('xla', dtype=torch.bfloat16):\n    y = model(x)\n",
            why="already the XLA form",
        ),
        Valid(
            "import torch\n\n\ndef run(*args, **kwargs):\n"
            "    with torch.autocast(*args, **kwargs):\n        return model(x)\n",
            why="arguments passed through unseen (found on torch's own sources: it crashed)",
        ),
        Valid(
            "import torch\n\nwith torch.autocast('cpu', dtype=torch.bfloat16):\n    y = model(x)\n",
            why="autocast on an explicit CPU device is a deliberate choice",
        ),
        Valid(
            "def autocast(device):\n    return device\n\n\nwith autocast('cuda'):\n    pass\n",
            why="a user's own function called autocast",
        ),
        Valid(
            "import torch\n\nprint('use torch.cuda.amp.autocast and a GradScaler on cuda')\n",
            why="names in a string",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n\nwith torch.cuda.amp.autocast():\n    loss = model(x)\n",
            'import torch\n\nwith torch.autocast("xla", dtype=torch.bfloat16):\n    loss = model(x)\n',
        ),
        Invalid(
            "import torch\n\nwith torch.autocast('cuda', dtype=torch.float16):\n    loss = model(x)\n",
            "import torch\n\nwith torch.autocast('xla', dtype=torch.bfloat16):\n    loss = model(x)\n",
            why="the quote style of the device string is kept",
        ),
        Invalid(
            "import torch\n\nwith torch.amp.autocast(device_type='cuda', enabled=use_amp):\n"
            "    loss = model(x)\n",
            "import torch\n\nwith torch.autocast('xla', dtype=torch.bfloat16, enabled=use_amp):\n"
            "    loss = model(x)\n",
        ),
        Invalid(
            "import torch\n\nwith torch.autocast(device_type=device.type, dtype=torch.float16):\n"
            "    loss = model(x)\n",
            'import torch\n\nwith torch.autocast("xla", dtype=torch.bfloat16):\n    loss = model(x)\n',
            why="a device type held in a variable is the training device, which is XLA now",
        ),
        Invalid(
            "import torch\n\ndevice_type = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            "with torch.autocast(device_type, torch.float16, args.amp, False):\n    loss = model(x)\n",
            "import torch\n\ndevice_type = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            'with torch.autocast("xla", dtype=torch.bfloat16, enabled=args.amp, '
            "cache_enabled=False):\n    loss = model(x)\n",
            why="positional arguments become keywords",
        ),
        Invalid(
            "from torch.cuda.amp import autocast\n\nwith autocast(enabled=False):\n    y = head(x)\n",
            'import torch\n\nwith torch.autocast("xla", dtype=torch.bfloat16, enabled=False):\n'
            "    y = head(x)\n",
            why="the old import goes, enabled=False regions stay disabled",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
            "    @torch.cuda.amp.autocast()\n    def forward(self, x):\n        return self.fc(x)\n",
            "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
            '    @torch.autocast("xla", dtype=torch.bfloat16)\n'
            "    def forward(self, x):\n        return self.fc(x)\n",
            why="autocast as a decorator",
        ),
    ]

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.is_name(original_node.func, *CUDA_AUTOCASTS):
            arguments = named_arguments(updated_node, CUDA_AUTOCAST_PARAMETERS)
            quote = '"'
        elif self.is_name(original_node.func, *DEVICE_AUTOCASTS):
            arguments = named_arguments(updated_node, DEVICE_AUTOCAST_PARAMETERS)
            device = arguments.get("device_type") if arguments is not None else None
            if device is None or not is_training_device_type(device):
                return updated_node
            quote = device.quote if isinstance(device, cst.SimpleString) else '"'
        else:
            return updated_node
        if arguments is None:
            return updated_node
        kept = "".join(
            f", {name}={code_of(arguments[name])}"
            for name in KEPT_AUTOCAST_KEYWORDS
            if name in arguments
        )
        self.release_binding(original_node.func)
        self.require_import(TORCH)
        self.record_rewrite()
        return cst.parse_expression(XLA_AUTOCAST.replace('"', quote) + kept + ")")
