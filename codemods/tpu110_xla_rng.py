"""TPU110: seed the XLA RNG next to ``torch.manual_seed``."""

from __future__ import annotations

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor
from libcst.metadata import ParentNodeProvider, QualifiedNameProvider, QualifiedNameSource

from migrate.fastcst.facts import FileFacts
from ._base import TORCH_XLA, Invalid, Safety, TpuCodemod, Valid, code_of, walk_all
from ._statements import AppliesStatementEdits

SEEDERS = frozenset({"torch.manual_seed", "torch.random.manual_seed"})
# Calls that already seed the XLA RNG, as written (TPU104 may have just produced them, before
# their import exists, so qualified names cannot be relied on).
XLA_SEEDERS = frozenset(
    {"torch_xla.manual_seed", "xm.set_rng_state", "torch_xla.core.xla_model.set_rng_state"}
)
# Seed expressions that can be evaluated twice with the same result.
SIMPLE_SEED = (cst.Name, cst.Attribute, cst.Integer, cst.BinaryOperation, cst.Subscript)


class XlaRng(AppliesStatementEdits, TpuCodemod):
    """
    What it does
        After each ``torch.manual_seed(seed)`` statement it adds ``torch_xla.manual_seed(seed)``
        (the 2.9 spelling of ``xm.set_rng_state(seed)``), keeping ``torch.manual_seed``. Nothing
        is added when the same block already seeds the XLA RNG with the same seed
        (``torch_xla.manual_seed(seed)`` or ``xm.set_rng_state(seed)``, e.g. produced by TPU104
        from ``torch.cuda.manual_seed_all(seed)``).

        Only in files that use torch_xla (they import it, or a rule of the pipeline made them
        an XLA script: it runs after every rule that can): a library module that
        seeds CPU-side data generation has no XLA RNG to seed. Seeds that are calls
        (``torch.manual_seed(random.randint(0, 9))``) are left alone: repeating them would give
        a different seed.

    Why
        ``torch.manual_seed`` does not seed the XLA RNG: dropout masks, ``torch.rand(...,
        device=xla)`` and random init done on the device are not reproducible without it.
        ``torch.manual_seed`` stays because it still drives CPU-side initialisation and
        DataLoader shuffling (the torch_xla examples call both). XLA's random stream differs from
        the CPU's for the same seed: runs are reproducible on TPU, not bit-equal to CUDA/CPU runs.

    Example
        Before::

            torch.manual_seed(args.seed)

        After::

            torch.manual_seed(args.seed)
            torch_xla.manual_seed(args.seed)
    """

    CODE = "TPU110"
    NAME = "xla-rng"
    SUMMARY = "after torch.manual_seed(s) also seed the XLA RNG: torch_xla.manual_seed(s)"
    SAFETY = Safety.SAFE
    TRIGGERS = ("manual_seed",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(*SEEDERS)

    VALID = [
        Valid(
            "import torch\nimport torch_xla\n\ntorch.manual_seed(0)\ntorch_xla.manual_seed(0)\n",
            why="already seeded",
        ),
        Valid(
            "import torch\nimport torch_xla.core.xla_model as xm\n\n"
            "torch.manual_seed(args.seed)\nprint('seeded')\nxm.set_rng_state(args.seed)\n",
            why="xm.set_rng_state later in the same block seeds it already",
        ),
        Valid(
            "import torch\nimport torch_xla\n\n"
            "torch_xla.manual_seed(args.seed)\ntorch.manual_seed(args.seed)\n",
            why="seeded just before (TPU104's mapping of torch.cuda.manual_seed_all)",
        ),
        Valid(
            "import torch\n\n\ndef make_data(n):\n    torch.manual_seed(0)\n    return torch.randn(n, 4)\n",
            why="a file without torch_xla: CPU data generation has no XLA RNG",
        ),
        Valid(
            "import random\nimport torch\nimport torch_xla\n\n"
            "torch.manual_seed(random.randint(0, 100))\n",
            why="a seed that is a call would differ when repeated",
        ),
        Valid(
            "import torch_xla\n\n\nclass Gen:\n    def manual_seed(self, s):\n        pass\n\n"
            "torch = Gen()\ntorch.manual_seed(1)\n",
            why="a look-alike object",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nimport torch_xla\n\ntorch.manual_seed(42)\ndevice = torch_xla.device()\n",
            "import torch\nimport torch_xla\n\ntorch.manual_seed(42)\ntorch_xla.manual_seed(42)\n"
            "device = torch_xla.device()\n",
        ),
        Invalid(
            "import torch\nimport torch_xla.core.xla_model as xm\n\n\ndef main(args):\n"
            "    # reproducibility\n    torch.manual_seed(args.seed)  # CPU init\n"
            "    model = Net()\n",
            "import torch\nimport torch_xla\nimport torch_xla.core.xla_model as xm\n\n\n"
            "def main(args):\n    # reproducibility\n    torch.manual_seed(args.seed)  # CPU init\n"
            "    torch_xla.manual_seed(args.seed)\n    model = Net()\n",
            why="comments stay where they were",
        ),
        Invalid(
            "import torch\nimport torch_xla\n\ntorch.manual_seed(args.seed + rank)\n",
            "import torch\nimport torch_xla\n\ntorch.manual_seed(args.seed + rank)\n"
            "torch_xla.manual_seed(args.seed + rank)\n",
            why="per-rank seeds",
        ),
        Invalid(
            "import torch\nimport torch_xla\n\ntorch.manual_seed(1)\ntorch_xla.manual_seed(2)\n",
            "import torch\nimport torch_xla\n\ntorch.manual_seed(1)\ntorch_xla.manual_seed(1)\n"
            "torch_xla.manual_seed(2)\n",
            why="a different seed is not the same seeding; the later call still wins",
        ),
        Invalid(
            "from torch import manual_seed\nimport torch_xla\n\nmanual_seed(cfg['seed'])\n",
            "from torch import manual_seed\nimport torch_xla\n\nmanual_seed(cfg['seed'])\n"
            "torch_xla.manual_seed(cfg['seed'])\n",
        ),
        Invalid(
            "import torch\nimport torch_xla\n\nif args.seed is not None:\n"
            "    torch.random.manual_seed(args.seed)\n\nrun()\n",
            "import torch\nimport torch_xla\n\nif args.seed is not None:\n"
            "    torch.random.manual_seed(args.seed)\n    torch_xla.manual_seed(args.seed)\n\nrun()\n",
        ),
        Invalid(
            "import torch\nimport torch_xla.runtime as xr\n\n\ndef _mp_fn(index, seed):\n"
            "    torch.manual_seed(seed)\n    world = xr.world_size()\n",
            "import torch\nimport torch_xla\nimport torch_xla.runtime as xr\n\n\n"
            "def _mp_fn(index, seed):\n    torch.manual_seed(seed)\n    torch_xla.manual_seed(seed)\n"
            "    world = xr.world_size()\n",
            why="any torch_xla import makes it an XLA script",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._uses_xla: bool | None = None

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if not self._file_uses_xla():  # first: it needs no scope analysis of the file
            return updated_node
        seed = self._seed_of(original_node)
        if seed is None or self._xla_seeded_nearby(original_node, seed):
            return updated_node
        self.require_import(TORCH_XLA)
        call = cst.Call(cst.parse_expression("torch_xla.manual_seed"), [cst.Arg(seed.deep_clone())])
        self.edits.insert_after(original_node, cst.SimpleStatementLine([cst.Expr(call)]))
        self.record_rewrite()
        return updated_node

    def _seed_of(self, line: cst.SimpleStatementLine) -> cst.BaseExpression | None:
        """The seed of a statement line that is just ``torch.manual_seed(seed)``."""
        if len(line.body) != 1 or not isinstance(line.body[0], cst.Expr):
            return None
        call = line.body[0].value
        if not (isinstance(call, cst.Call) and self._is_imported(call.func, SEEDERS)):
            return None
        if (
            len(call.args) != 1
            or call.args[0].star
            or not isinstance(call.args[0].value, SIMPLE_SEED)
        ):
            return None
        seed = call.args[0].value
        has_call = any(isinstance(n, cst.Call) for n in walk_all(seed))
        return None if has_call else seed

    def _is_imported(self, node: cst.CSTNode, names: frozenset[str]) -> bool:
        """Like ``is_name``, but only through an import (``torch = Gen()`` is not torch)."""
        qualified = self.get_metadata(QualifiedNameProvider, node, set())
        return any(q.name in names and q.source is QualifiedNameSource.IMPORT for q in qualified)

    def _xla_seeded_nearby(self, line: cst.SimpleStatementLine, seed: cst.BaseExpression) -> bool:
        block = self.get_metadata(ParentNodeProvider, line)
        for statement in getattr(block, "body", ()):
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if _seeds_xla_with(small, seed):
                        return True
        return False

    def _file_uses_xla(self) -> bool:
        if self._uses_xla is None:
            pending = self.context.scratch.get(AddImportsVisitor.CONTEXT_KEY, [])
            self._uses_xla = self.imports_module("torch_xla") or any(
                _module_of(item).startswith("torch_xla") for item in pending
            )
        return self._uses_xla


def _seeds_xla_with(small: cst.BaseSmallStatement, seed: cst.BaseExpression) -> bool:
    if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
        return False
    call = small.value
    callee = code_of(call.func)
    return (
        callee in XLA_SEEDERS
        and len(call.args) >= 1
        and call.args[0].keyword is None
        and call.args[0].value.deep_equals(seed)
    )


def _module_of(item) -> str:
    module = getattr(item, "module_name", None)
    if module is None and isinstance(item, tuple):
        module = item[0]
    return module or ""
