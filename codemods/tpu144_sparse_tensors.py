"""TPU144: a sparse tensor moved to the device is made dense first (XLA has no sparse tensors)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ScopeProvider

from migrate.fastcst.facts import FileFacts
from ._base import FindingDoc, Invalid, Safety, TpuCodemod, Valid

FINDING = "TPU206"
MESSAGE = "made dense before the move: XLA has no sparse tensors; it takes its dense size"
# Tensor methods that return a sparse layout.
TO_SPARSE = frozenset(
    {
        "to_sparse",
        "to_sparse_coo",
        "to_sparse_csr",
        "to_sparse_csc",
        "to_sparse_bsr",
        "to_sparse_bsc",
    }
)
# ``x.to(<one of these>)`` changes the dtype, not the device.
DTYPES = frozenset(
    f"torch.{name}"
    for name in (
        "float16 float32 float64 bfloat16 half float double complex64 complex128 cfloat cdouble "
        "int8 int16 int32 int64 uint8 short int long bool"
    ).split()
)
# Constructors of sparse tensors.
SPARSE_CONSTRUCTORS = frozenset(
    {
        "torch.sparse_coo_tensor",
        "torch.sparse_csr_tensor",
        "torch.sparse_csc_tensor",
        "torch.sparse_bsr_tensor",
        "torch.sparse_bsc_tensor",
        "torch.sparse_compressed_tensor",
        "torch.sparse.FloatTensor",
        "torch.sparse.DoubleTensor",
        "torch.sparse.LongTensor",
    }
)


class SparseTensors(TpuCodemod):
    """
    What it does
        Where a sparse tensor is moved to the device, it is made dense first:

        - ``x.to_sparse().to(device)`` (any ``to_sparse*`` method) becomes
          ``x.to_dense().to(device)``;
        - ``torch.sparse_coo_tensor(...).to(device)`` (any sparse constructor) and ``s.to(device)``
          where every value ``s`` can hold is one of those get ``.to_dense()`` before the move.

        Each rewrite reports TPU206 with an inline marker. Sparse tensors that stay on the CPU
        (preprocessing before the move) are left alone, and so are ``torch.spmm`` and
        ``torch.sparse.mm``, which take dense operands too.

    Why
        XLA has no sparse layouts: moving a sparse tensor to the XLA device raises
        ``NotImplementedError: Could not run 'aten::_sparse_coo_tensor_with_dims_and_tensors'
        ... 'SparseXLA' backend``, so a graph network that keeps its adjacency matrix sparse
        does not start. Dense, the same products give the same values (summed in another
        order); the tensor takes its dense size in device memory, which the marker points out.

    Example
        Before::

            adj = torch.sparse_coo_tensor(edges, weights, (n, n))
            return features.to_sparse().to(device), adj.to(device)

        After::

            adj = torch.sparse_coo_tensor(edges, weights, (n, n))
            # TODO(tpu-migrate): TPU206 made dense before the move: ...
            return features.to_dense().to(device), adj.to_dense().to(device)
    """

    CODE = "TPU144"
    NAME = "sparse-tensors"
    SUMMARY = "Make sparse tensors dense before they move to the device (XLA has no sparse tensors)"
    SAFETY = Safety.SEMANTIC
    FINDINGS = {
        FINDING: FindingDoc(
            "a sparse tensor made dense before it moves to the device",
            why="XLA has no sparse tensors, so the rule made the tensor dense where it moves to "
            "the device. Products with it give the same values, but it now takes its dense size "
            "(rows x columns) in device memory.",
            what_to_do="Check that the dense tensor fits in device memory. For a large graph, "
            "keep the edges as index tensors and aggregate with index_add_ or scatter_add_ "
            "instead of a sparse matrix product.",
        )
    }
    TRIGGERS = ("sparse",)

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses("torch") and facts.calls("to", "cuda")

    VALID = [
        Valid(
            "import torch\n\nadj = torch.sparse_coo_tensor(i, v, (3, 3))\ny = torch.spmm(adj, x)\n",
            why="a sparse tensor that stays on the CPU",
        ),
        Valid(
            "import torch\n\nx = dense.to_sparse().to(torch.float64)\n",
            why="a dtype cast is not a move",
        ),
        Valid(
            "import torch\n\nfeatures = features.to_dense().to(device)\n",
            why="already migrated",
        ),
        Valid(
            "import torch\n\nadj = load()\nadj = adj.to_sparse() if small else adj\n"
            "adj = adj.to(device)\n",
            why="not every value the name holds is sparse: left as written",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\ndef load(device):\n"
            "    return features.to_sparse().to(device), adj.to_sparse_csr().cuda()\n",
            "import torch\n\n\ndef load(device):\n"
            f"    # TODO(tpu-migrate): {FINDING} {MESSAGE}\n"
            "    return features.to_dense().to(device), adj.to_dense().cuda()\n",
            findings=[FINDING, FINDING],
            why="two moves on one line: one marker, two findings",
        ),
        Invalid(
            "import torch\n\n"
            "adj = torch.sparse_coo_tensor(edges, torch.ones(n), (n, n))\n"
            "adj = adj.to(device)\n"
            "eye = torch.sparse.FloatTensor(i, v, size).to(device, non_blocking=True)\n",
            "import torch\n\n"
            "adj = torch.sparse_coo_tensor(edges, torch.ones(n), (n, n))\n"
            f"# TODO(tpu-migrate): {FINDING} {MESSAGE}\n"
            "adj = adj.to_dense().to(device)\n"
            f"# TODO(tpu-migrate): {FINDING} {MESSAGE}\n"
            "eye = torch.sparse.FloatTensor(i, v, size).to_dense().to(device, non_blocking=True)\n",
            findings=[FINDING, FINDING],
            why="a name bound only to a sparse tensor, and a constructor moved directly",
        ),
        Invalid(
            "import torch\n\n\ndef to_device(features, device):\n"
            "    sparse: torch.Tensor = features.to_sparse()\n"
            "    return sparse.to(device)\n",
            "import torch\n\n\ndef to_device(features, device):\n"
            "    sparse: torch.Tensor = features.to_sparse()\n"
            f"    # TODO(tpu-migrate): {FINDING} {MESSAGE}\n"
            "    return sparse.to_dense().to(device)\n",
            findings=[FINDING],
            why="an annotated assignment binds the sparse tensor",
        ),
    ]

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if not self._is_move(original_node):
            return updated_node
        moved = original_node.func.value  # type: ignore[attr-defined]
        if self._to_sparse(moved):
            dense = updated_node.func.value.with_changes(  # type: ignore[attr-defined]
                func=updated_node.func.value.func.with_changes(attr=cst.Name("to_dense")),
                args=(),
            )
        elif self._sparse_constructor(moved) or self._holds_only_sparse(moved):
            dense = cst.Call(
                func=cst.Attribute(
                    value=updated_node.func.value,  # type: ignore[attr-defined]
                    attr=cst.Name("to_dense"),
                )
            )
        else:
            return updated_node
        self.flag(original_node, FINDING, MESSAGE)
        self.record_rewrite()
        return updated_node.with_changes(
            func=updated_node.func.with_changes(value=dense)  # type: ignore[attr-defined]
        )

    def _is_move(self, call: cst.Call) -> bool:
        """``x.cuda(...)`` or ``x.to(<not a dtype>...)``."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("to", "cuda"):
            return False
        if func.attr.value == "cuda":
            return True
        first = call.args[0] if call.args else None
        if first is None or first.keyword is not None and first.keyword.value != "device":
            return False
        return not self.is_name(first.value, *DTYPES)

    def _to_sparse(self, node: cst.CSTNode) -> bool:
        return (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in TO_SPARSE
        )

    def _sparse_constructor(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Call) and self.is_name(node.func, *SPARSE_CONSTRUCTORS)

    def _holds_only_sparse(self, node: cst.CSTNode) -> bool:
        """``node`` is a name bound to a ``to_sparse*`` call or a sparse constructor: by the
        last assignment on a line before it in its own scope, or by every assignment of an
        enclosing one.
        (Were the guess wrong, ``to_dense()`` of a dense tensor is the tensor itself.)"""
        if not isinstance(node, cst.Name):
            return False
        scope = self.get_metadata(ScopeProvider, node, None)
        if scope is None or node.value not in scope:
            return False
        assignments = list(scope[node.value])
        local = [a for a in assignments if a.scope is scope]
        if local:
            read_line = self.position(node)[
                0
            ]  # (the assignment the read is part of is not before it)
            before = [a for a in local if self.position(a.node)[0] < read_line]
            assignments = [max(before, key=lambda a: self.position(a.node))] if before else []
        values = [self.assigned_value(a) for a in assignments]
        return bool(values) and all(
            v is not None and (self._to_sparse(v) or self._sparse_constructor(v)) for v in values
        )
