"""TPU134: torch.cuda.set_device goes: each XLA process owns its device (split off from TPU108)."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import Invalid, Safety, TpuCodemod, Valid
from ._statements import AppliesStatementEdits

SET_DEVICE = ("torch.cuda.set_device",)


class SetDevice(AppliesStatementEdits, TpuCodemod):
    """
    What it does
        A ``torch.cuda.set_device(...)`` statement is removed (from an ``a; b`` line, just the
        call). Split off from TPU108, which still names it.

    Why
        A CUDA worker picks its GPU with ``set_device(local_rank)``; a process started by
        ``torch_xla.launch`` owns exactly one XLA device, which ``torch_xla.device()`` returns,
        and there is no CUDA to select on a TPU host.

    Example
        Before::

            def main_worker(gpu, args):
                torch.cuda.set_device(gpu)
                train(args)

        After::

            def main_worker(gpu, args):
                train(args)
    """

    CODE = "TPU134"
    NAME = "cuda-set-device"
    SUMMARY = "torch.cuda.set_device(...) removed: each process owns its one XLA device"
    SAFETY = Safety.SAFE
    TRIGGERS = ("set_device",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(*SET_DEVICE)

    VALID = [
        Valid(
            "class Worker:\n    def set_device(self, gpu):\n        self.gpu = gpu\n\n\n"
            "Worker().set_device(0)\n",
            why="a method of the user's own class",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n"
            "def main_worker(gpu, args):\n"
            "    torch.cuda.set_device(gpu)\n"
            "    train(args, torch.float32)\n",
            "import torch\n\n" "def main_worker(gpu, args):\n" "    train(args, torch.float32)\n",
        ),
        Invalid(
            "import torch\n\nx = torch.zeros(1); torch.cuda.set_device(0); train(x)\n",
            "import torch\n\nx = torch.zeros(1); train(x)\n",
            why="one call of an a; b line",
        ),
    ]

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        removed: set[int] = set()
        for old in original_node.body:
            if isinstance(old, cst.Expr) and isinstance(old.value, cst.Call):
                if self.is_name(old.value.func, *SET_DEVICE):
                    removed.add(id(old))
                    self.release_binding(old.value.func)
                    self.record_rewrite()
        return self.edits.remove_small_statements(original_node, updated_node, removed)
