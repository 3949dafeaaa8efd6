"""TPU111: sparse embedding gradients and SparseAdam -> dense (XLA has no sparse tensors)."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import FindingDoc, ImportSpec, Invalid, Safety, TpuCodemod, Valid

FINDING = "TPU204"
# Callables with a ``sparse=`` keyword that makes the weight's gradient a sparse tensor.
SPARSE_GRADIENT_CALLS = frozenset(
    {
        "torch.nn.Embedding",
        "torch.nn.EmbeddingBag",
        "torch.nn.Embedding.from_pretrained",
        "torch.nn.EmbeddingBag.from_pretrained",
        "torch.nn.modules.sparse.Embedding",
        "torch.nn.modules.sparse.EmbeddingBag",
        "torch.nn.functional.embedding",
        "torch.nn.functional.embedding_bag",
    }
)
SPARSE_ADAM = frozenset({"torch.optim.SparseAdam", "torch.optim.sparse_adam.SparseAdam"})
# SparseAdam(params, lr, betas, eps, maximize): positional arguments after ``params`` become
# keywords, because Adam's fourth positional parameter is weight_decay, not maximize.
SPARSE_ADAM_PARAMETERS = ("params", "lr", "betas", "eps", "maximize")
ADAM = ImportSpec("torch.optim", "Adam")

EMBEDDING_MESSAGE = "sparse=False: no sparse gradients on XLA; the table's gradient is dense"
OPTIMIZER_MESSAGE = "SparseAdam -> Adam: rows not in the batch move too; numerics differ"


class SparseEmbeddings(TpuCodemod):
    """
    What it does
        ``nn.Embedding(..., sparse=True)``, ``nn.EmbeddingBag(..., sparse=True)``, their
        ``from_pretrained(..., sparse=True)`` and ``F.embedding`` / ``F.embedding_bag(...,
        sparse=True)`` get ``sparse=False`` (also when ``sparse=`` is a variable such as
        ``sparse=args.sparse``). ``torch.optim.SparseAdam(params, lr, betas, eps, maximize)``
        becomes ``torch.optim.Adam`` with the same hyper-parameters (positional ones after
        ``params`` as keywords, since Adam's fourth parameter is ``weight_decay``). Each edit
        reports TPU204 with an inline marker that explains the behaviour change.

    Why
        XLA has no sparse tensors: ``Embedding(sparse=True)`` raises NotImplementedError
        (SparseXLA) in backward, ``EmbeddingBag(sparse=True)`` warns and falls back to dense,
        and ``SparseAdam`` raises on the dense gradients it then gets. Measured on torch_xla 2.9
        (recommender_sparse fixture): ``EmbeddingBag``'s ops (``aten::_embedding_bag`` and its
        backward) fall back to the CPU; for speed, a fixed-size bag as ``Embedding`` followed by
        ``.mean(1)`` / ``.sum(1)`` stays on the device (not rewritten automatically).

        Semantics changes (on purpose, reported as TPU204):

        - dense gradients: every step materialises a gradient as large as the table (memory
          and bandwidth grow with the vocabulary, not with the batch);
        - dense Adam updates every row at every step: a row that is not in the batch still
          moves while its momentum decays, where SparseAdam leaves it alone. The first step is
          identical (zero momentum), later steps differ. ``tpu-migrate verify`` therefore
          cannot prove a SparseAdam script equivalent; compare it with a dense run of the
          original (``sparse=False`` + ``Adam``), as the ``recommender_sparse`` fixture does.

    Example
        Before::

            self.emb = nn.EmbeddingBag(n_items, 32, mode="sum", sparse=True)
            sparse_opt = torch.optim.SparseAdam(model.emb.parameters(), lr=1e-2)

        After::

            # TODO(tpu-migrate): TPU204 sparse=False: XLA has no sparse gradients; ...
            self.emb = nn.EmbeddingBag(n_items, 32, mode="sum", sparse=False)
            # TODO(tpu-migrate): TPU204 SparseAdam -> Adam (same lr/betas/eps): ...
            sparse_opt = torch.optim.Adam(model.emb.parameters(), lr=1e-2)
    """

    CODE = "TPU111"
    NAME = "sparse-embeddings"
    SUMMARY = "sparse=True embeddings -> sparse=False and SparseAdam -> Adam (XLA has no sparse gradients)"
    SAFETY = Safety.SEMANTIC
    NUMERICS = (
        "SparseAdam -> Adam: dense Adam also moves embedding rows not in the batch (momentum), "
        "so results differ after the first step; compare the script's dense-optimizer path"
    )
    FINDINGS = {
        FINDING: FindingDoc(
            "dense embedding gradients / dense Adam instead of SparseAdam: behaviour change",
            why="XLA has no sparse tensors: Embedding(sparse=True) raises in backward and "
            "SparseAdam raises on the dense gradients, so the rule switched to dense gradients "
            "and Adam. Each step now materialises a gradient as large as the table, and dense "
            "Adam moves every row, also rows that are not in the batch (their momentum "
            "decays), where SparseAdam left them alone: training differs after the first step.",
            what_to_do="Check that the table's dense gradient fits in device memory and that "
            "convergence is still acceptable (compare with a dense run of the original); for "
            "very large tables shard the embedding with SPMD.",
        )
    }
    TRIGGERS = ("sparse", "SparseAdam")

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(*SPARSE_GRADIENT_CALLS, *SPARSE_ADAM)

    VALID = [
        Valid("import torch.nn as nn\nemb = nn.Embedding(1000, 64)\n", why="dense already"),
        Valid(
            "import torch.nn as nn\nemb = nn.EmbeddingBag(1000, 64, mode='sum', sparse=False)\n",
            why="explicitly dense",
        ),
        Valid(
            "import torch\nopt = torch.optim.Adam(model.parameters(), lr=1e-3)\n",
            why="a dense optimizer",
        ),
        Valid(
            "import torch\nx = torch.sparse_coo_tensor(i, v, (3, 3))\n",
            why="sparse tensors outside embeddings are not this rule's",
        ),
        Valid(
            "from mylib import Embedding\nemb = Embedding(100, 8, sparse=True)\n",
            why="a user's own Embedding class",
        ),
        Valid(
            "import torch.nn as nn\n"
            "emb = nn.Embedding(1000, 64, sparse=False)\n"
            "# TODO(tpu-migrate): TPU204 this comment is not a call\n",
            why="already migrated",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch.nn as nn\n\nemb = nn.Embedding(1000, 64, sparse=True)\n",
            f"import torch.nn as nn\n\n# TODO(tpu-migrate): {FINDING} {EMBEDDING_MESSAGE}\n"
            "emb = nn.Embedding(1000, 64, sparse=False)\n",
            findings=[FINDING],
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Rec(nn.Module):\n"
            "    def __init__(self, n, d):\n        super().__init__()\n"
            "        self.bag = nn.EmbeddingBag(n, d, mode='sum', sparse=True)  # user table\n",
            "import torch\nfrom torch import nn\n\n\nclass Rec(nn.Module):\n"
            "    def __init__(self, n, d):\n        super().__init__()\n"
            f"        # TODO(tpu-migrate): {FINDING} {EMBEDDING_MESSAGE}\n"
            "        self.bag = nn.EmbeddingBag(n, d, mode='sum', sparse=False)  # user table\n",
            findings=[FINDING],
        ),
        Invalid(
            "import torch.nn.functional as F\n\n\ndef lookup(ids, w):\n"
            "    return F.embedding(ids, w, sparse=True)\n",
            "import torch.nn.functional as F\n\n\ndef lookup(ids, w):\n"
            f"    # TODO(tpu-migrate): {FINDING} {EMBEDDING_MESSAGE}\n"
            "    return F.embedding(ids, w, sparse=False)\n",
            findings=[FINDING],
        ),
        Invalid(
            "import torch.nn as nn\n\nemb = nn.Embedding.from_pretrained(vectors, freeze=False, "
            "sparse=args.sparse)\n",
            f"import torch.nn as nn\n\n# TODO(tpu-migrate): {FINDING} {EMBEDDING_MESSAGE}\n"
            "emb = nn.Embedding.from_pretrained(vectors, freeze=False, sparse=False)\n",
            findings=[FINDING],
            why="a sparse flag from the command line is forced dense too",
        ),
        Invalid(
            "import torch\n\nopt = torch.optim.SparseAdam(list(model.emb.parameters()), lr=0.01)\n",
            f"import torch\n\n# TODO(tpu-migrate): {FINDING} {OPTIMIZER_MESSAGE}\n"
            "opt = torch.optim.Adam(list(model.emb.parameters()), lr=0.01)\n",
            findings=[FINDING],
        ),
        Invalid(
            "import torch.optim as optim\n\n"
            "opt = optim.SparseAdam(params, 1e-3, (0.8, 0.99), 1e-6, True)\n",
            f"import torch.optim as optim\n\n# TODO(tpu-migrate): {FINDING} {OPTIMIZER_MESSAGE}\n"
            "opt = optim.Adam(params, lr=1e-3, betas=(0.8, 0.99), eps=1e-6, maximize=True)\n",
            findings=[FINDING],
            why="Adam's 4th positional parameter is weight_decay: positional ones become keywords",
        ),
        Invalid(
            "from torch.optim import SparseAdam\n\nopt = SparseAdam(params, lr=lr, eps=1e-7)\n",
            "from torch.optim import Adam\n\n"
            f"# TODO(tpu-migrate): {FINDING} {OPTIMIZER_MESSAGE}\n"
            "opt = Adam(params, lr=lr, eps=1e-7)\n",
            findings=[FINDING],
        ),
        Invalid(
            "import torch\nimport torch.nn as nn\n\n"
            "emb = nn.EmbeddingBag(100, 8, sparse=True)\n"
            "opts = [torch.optim.SparseAdam(emb.parameters()), torch.optim.SGD(head, lr=0.1)]\n",
            "import torch\nimport torch.nn as nn\n\n"
            f"# TODO(tpu-migrate): {FINDING} {EMBEDDING_MESSAGE}\n"
            "emb = nn.EmbeddingBag(100, 8, sparse=False)\n"
            f"# TODO(tpu-migrate): {FINDING} {OPTIMIZER_MESSAGE}\n"
            "opts = [torch.optim.Adam(emb.parameters()), torch.optim.SGD(head, lr=0.1)]\n",
            findings=[FINDING, FINDING],
        ),
    ]

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if self.is_name(original_node.func, *SPARSE_GRADIENT_CALLS):
            return self._dense_embedding(original_node, updated_node)
        if self.is_name(original_node.func, *SPARSE_ADAM):
            return self._dense_adam(original_node, updated_node)
        return updated_node

    def _dense_embedding(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        args = list(updated.args)
        for index, arg in enumerate(args):
            if arg.keyword is not None and arg.keyword.value == "sparse":
                if isinstance(arg.value, cst.Name) and arg.value.value == "False":
                    return updated
                args[index] = arg.with_changes(value=cst.Name("False"))
                self.flag(original, FINDING, EMBEDDING_MESSAGE)
                self.record_rewrite()
                return updated.with_changes(args=args)
        return updated

    def _dense_adam(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        args = []
        for index, arg in enumerate(updated.args):
            if 0 < index < len(SPARSE_ADAM_PARAMETERS) and arg.keyword is None and not arg.star:
                keyword = cst.Name(SPARSE_ADAM_PARAMETERS[index])
                arg = arg.with_changes(
                    keyword=keyword,
                    equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""),
                        whitespace_after=cst.SimpleWhitespace(""),
                    ),
                )
            args.append(arg)
        self.flag(original, FINDING, OPTIMIZER_MESSAGE)
        self.record_rewrite()
        return updated.with_changes(func=self._adam_callee(original.func, updated.func), args=args)

    def _adam_callee(self, original: cst.BaseExpression, updated: cst.BaseExpression):
        if isinstance(updated, cst.Attribute):
            return updated.with_changes(attr=cst.Name("Adam"))
        self.release_binding(original)
        self.require_import(ADAM)
        return cst.Name("Adam")
