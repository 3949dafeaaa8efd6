"""TPU120: Hogwild training (one model in shared memory, many processes) stays on the CPU."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import FindingDoc, Invalid, Safety, TpuCodemod, Valid

FINDING = "TPU291"
SHARE_METHODS = frozenset({"share_memory", "share_memory_"})
MULTIPROCESSING = "torch.multiprocessing"


class Hogwild(TpuCodemod):
    """
    What it does
        Finds Hogwild training: ``model.share_memory()`` (or a tensor's ``share_memory_()``)
        in a file that starts ``torch.multiprocessing`` workers. The call is reported (TPU291)
        and no later rule touches the file: it keeps training on the CPU, as it does today.

    Why
        Hogwild has several processes update one set of parameters in shared CPU memory,
        without locks. XLA tensors live on the device and have no shared host storage:
        ``share_memory()`` on a model moved to XLA fails (``_share_fd_: only available on
        CPU``), and each worker would open the TPU runtime on its own. There is no XLA form of
        the same algorithm, so a rewrite would either crash or change the training.

    Example
        Before::

            model = Net().to(device)
            model.share_memory()
            for rank in range(args.num_processes):
                mp.Process(target=train, args=(rank, model)).start()

        After::

            model = Net().to(device)
            # TODO(tpu-migrate): TPU291 Hogwild training shares CPU memory between processes:
            # it does not carry over to XLA, the file stays on the CPU
            model.share_memory()
            for rank in range(args.num_processes):
                mp.Process(target=train, args=(rank, model)).start()
    """

    CODE = "TPU120"
    NAME = "hogwild"
    SUMMARY = "Hogwild training (a model in shared memory, many processes) stays on the CPU"
    SAFETY = Safety.MANUAL
    TRIGGERS = ("share_memory",)

    FINDINGS = {
        FINDING: FindingDoc(
            "Hogwild training shares CPU memory between processes: it does not carry over to "
            "XLA, the file stays on the CPU",
            why="XLA tensors have no shared host storage (share_memory() raises '_share_fd_: "
            "only available on CPU'), and lock-free updates of one parameter set by several "
            "processes have no XLA equivalent.",
            what_to_do="on a TPU, train data-parallel instead: one process per device with "
            "torch_xla.launch(fn), each holding its own replica, and xm.optimizer_step(opt) to "
            "all-reduce the gradients (or DDP with the 'xla' backend). The effective batch is "
            "then the per-device batch times the number of devices. Modules this file imports "
            "are migrated on their own: keep the workers' code off XLA too (tpu-migrate: ignore) "
            "if it stays Hogwild.",
        ),
    }

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(MULTIPROCESSING) and facts.calls(*SHARE_METHODS)

    VALID = [
        Valid(
            "import torch\n\n"
            "model = Net()\n"
            "model.share_memory()\n",
            why="shared memory without multiprocessing workers: nothing Hogwild about it",
        ),
        Valid(
            "import torch.multiprocessing as mp\n\n\n"
            "def main(rank):\n    train(rank)\n\n\n"
            "mp.spawn(main, nprocs=2)\n",
            why="plain multi-process training: TPU108 migrates it",
        ),
    ]

    INVALID = [
        Invalid(
            "from torch import multiprocessing\n\n"
            "counter = torch.zeros(1).share_memory_()\n"
            "with multiprocessing.Pool(4) as pool:\n"
            "    pool.map(work, range(4))\n",
            "from torch import multiprocessing\n\n"
            "# TODO(tpu-migrate): TPU291 Hogwild training shares CPU memory between "
            "processes: it does not carry over to XLA, the file stays on the CPU\n"
            "counter = torch.zeros(1).share_memory_()\n"
            "with multiprocessing.Pool(4) as pool:\n"
            "    pool.map(work, range(4))\n",
            findings=[FINDING],
            why="a shared tensor and a pool of workers",
        ),
    ]

    def visit_Module(self, node: cst.Module) -> bool:
        return self.imports_module(MULTIPROCESSING)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in SHARE_METHODS and not node.args:
            self.flag(node, FINDING, str(self.FINDINGS[FINDING]))
            self.keep_file_off_xla("Hogwild training: shared CPU memory between processes")
