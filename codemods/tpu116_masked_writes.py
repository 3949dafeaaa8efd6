"""TPU116: boolean-mask writes ``x[mask] = v`` -> ``x.masked_fill_(mask, v)`` / ``torch.where``."""

from __future__ import annotations

import ast

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import ImportSpec, Invalid, Safety, TpuCodemod, Valid, code_of, walk_all
from ._loops import ModuleIndex, positional_arguments
from ._tensors import COMPARE_FUNCTIONS, LOGICAL_FUNCTIONS, PREDICATES, TensorFacts, bare

TORCH = ImportSpec("torch")
# ``out = torch.zeros_like(src)``: a fresh tensor with the dtype and shape of ``src``.
FRESH_LIKE = frozenset({"zeros_like", "ones_like", "empty_like", "full_like"})
MASK_CALLS = PREDICATES | COMPARE_FUNCTIONS | LOGICAL_FUNCTIONS
SCOPES_THAT_CAPTURE = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


class MaskedWrites(TpuCodemod):
    """
    What it does
        Rewrites an assignment through a boolean mask into a fixed-shape op:

        - ``x[m] = v`` -> ``x.masked_fill_(m, v)`` when ``v`` is a Python scalar (a number,
          ``True``/``False``, ``float("-inf")``, ``math.inf``, ``torch.finfo(t.dtype).min``, or a
          name only ever bound to one) and ``m`` is a boolean mask built elementwise from ``x``
          itself: a comparison of ``x`` (or of ``x.abs()``, ``x * 2``, ``torch.rand_like(x)``...)
          with a scalar, ``torch.isnan(x)`` / ``x.isinf()`` / ``x.bool()``, ``~``, ``&``, ``|``
          of such masks, or a name bound once to one of these earlier in the same function
          (``x`` not rebound in between). ``x`` must be known to be a tensor: a ``torch``
          call's result, an annotated ``torch.Tensor`` parameter, an input of an ``nn.Module``'s
          ``forward``, or the mask itself is a torch call (``torch.isnan(x)``). Both forms write
          in place, so aliases and views see the same change.
        - ``out[m] = src[m]`` -> ``out = torch.where(m, src, out)`` when ``out`` is a local
          created just before in the same block as ``torch.zeros_like(src)`` (or ``ones_like``,
          ``empty_like``, ``full_like``, ``src.clone()``), is not used in between, and is not
          captured by a nested function: only then can nobody observe that the rewrite
          rebinds ``out`` instead of writing into it, and the dtypes agree.

        Left alone (TPU117 reports a boolean-mask write in step/forward code as TPU251):
        masks whose shape may differ from ``x`` (``x[lengths == 0] = 0`` with a per-row mask:
        indexing fills whole rows, ``masked_fill_`` would broadcast along the last dimension),
        masks of unknown origin (``x[mask] = 0`` with ``mask`` a parameter), tuple indexes
        (``x[mask, 0] = v``), integer and slice indexes, augmented assignments (``x[m] += 1``),
        tensor values that are not the same-mask gather of a fresh ``*_like`` source, and
        targets that may be NumPy arrays (``a[a < 0] = 0`` with ``a`` from ``np.load``).

    Why
        ``x[m] = v`` is ``index_put_`` with a boolean index: XLA has to turn the mask into
        indices (``nonzero``), whose count depends on the data, so each new count compiles a new
        graph and syncs with the host (pitfall P3: 6 compiles in 5 steps, ``aten::nonzero``
        fallback). ``masked_fill_`` and ``torch.where`` keep every shape static: one graph.
        On CPU and GPU the results are the same. One difference: a scalar outside the tensor's
        dtype range (``-1e9`` into a float16 tensor) raises in ``masked_fill_`` where indexing
        silently stored ``-inf``; in bfloat16 (the TPU dtype) ``-1e9`` is representable.

    Example
        Before::

            x[x < 0] = 0
            scores[torch.isnan(scores)] = float("-inf")

        After::

            x.masked_fill_(x < 0, 0)
            scores.masked_fill_(torch.isnan(scores), float("-inf"))
    """

    CODE = "TPU116"
    NAME = "masked-writes"
    SUMMARY = "Boolean-mask writes x[m] = v become masked_fill_ / torch.where (static shapes)"
    SAFETY = Safety.SAFE
    TRIGGERS = ("]=", "] =")  # every boolean-mask write is an indexed assignment

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return not facts.parsed or any(
            _may_be_mask_write(write, facts) for write in facts.subscript_writes
        )

    VALID = [
        Valid(
            "import torch\n\nx = torch.zeros(4, 3)\nx[0] = 1\nx[:, 1] = 2\nx[1:3] = 0\n",
            why="integer and slice indexes are static already",
        ),
        Valid(
            "import numpy as np\n\na = np.load('a.npy')\na[a < 0] = 0\n",
            why="a NumPy array has no masked_fill_",
        ),
        Valid(
            "def clip(values):\n    values[values < 0] = 0\n    return values\n",
            why="nothing says values is a tensor (it may be a NumPy array)",
        ),
        Valid(
            "import torch\n\n\ndef zero_empty_rows(x: torch.Tensor, lengths: torch.Tensor):\n"
            "    x[lengths == 0] = 0\n    return x\n",
            why="a per-row mask: indexing fills rows, masked_fill_ would broadcast on the last "
            "dimension",
        ),
        Valid(
            "import torch\n\n\ndef f(x: torch.Tensor, mask: torch.Tensor):\n"
            "    x[mask] = 0\n    x[mask, 0] = 1\n    x[x > 0] += 1\n    return x\n",
            why="a mask of unknown shape, a tuple index, an augmented assignment",
        ),
        Valid(
            "import torch\n\n\ndef f(x: torch.Tensor, y: torch.Tensor):\n"
            "    m = x < 0\n    x = x.view(-1)\n    x[m] = 0\n    return x\n",
            why="x is rebound between the mask and the write: shapes may differ",
        ),
        Valid(
            "import torch\n\n\ndef f(x: torch.Tensor, y: torch.Tensor):\n"
            "    x[x < 0] = y[x < 0]\n    return x\n",
            why="a tensor value written into a parameter: the caller sees the in-place change",
        ),
        Valid(
            "import torch\n\n\ndef f(src: torch.Tensor, keep: list):\n"
            "    out = torch.zeros_like(src)\n    keep.append(out)\n"
            "    out[src > 0] = src[src > 0]\n    return out\n",
            why="out escapes before the write: rebinding it would change what keep holds",
        ),
        Valid(
            "import torch\n\n\ndef f(src: torch.Tensor, other: torch.Tensor):\n"
            "    out = torch.zeros_like(src)\n    out[src > 0] = other[src > 0]\n    return out\n",
            why="the value comes from another tensor whose dtype may differ",
        ),
        Valid(
            "import torch\n\n\ndef top_k(logits: torch.Tensor, k: int):\n"
            "    v, _ = torch.topk(logits, k)\n    logits[logits < v[:, [-1]]] = -float('Inf')\n"
            "    return logits\n",
            why="compared with another tensor: the mask's shape is not provably logits'",
        ),
        Valid(
            "import torch\n\n\ndef f(x: torch.Tensor):\n    x.masked_fill_(x < 0, 0)\n"
            "    return x\n",
            why="already the static form",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n\nx = torch.randn(8)\nx[x < 0] = 0\n",
            "import torch\n\nx = torch.randn(8)\nx.masked_fill_(x < 0, 0)\n",
            why="a comparison of the tensor itself with a number",
        ),
        Invalid(
            "import torch\n\n\ndef clean(scores):\n"
            "    scores[torch.isnan(scores)] = float('-inf')\n    return scores\n",
            "import torch\n\n\ndef clean(scores):\n"
            "    scores.masked_fill_(torch.isnan(scores), float('-inf'))\n    return scores\n",
            why="torch.isnan proves scores is a tensor",
        ),
        Invalid(
            "import math\n\nimport torch\n\n\ndef f(x: torch.Tensor, t: torch.Tensor):\n"
            "    x[x.abs() > 1e4] = math.inf\n    t[t.isinf()] = torch.finfo(t.dtype).min\n"
            "    x[torch.rand_like(x) < 0.1] = -math.inf\n    return x, t\n",
            "import math\n\nimport torch\n\n\ndef f(x: torch.Tensor, t: torch.Tensor):\n"
            "    x.masked_fill_(x.abs() > 1e4, math.inf)\n"
            "    t.masked_fill_(t.isinf(), torch.finfo(t.dtype).min)\n"
            "    x.masked_fill_(torch.rand_like(x) < 0.1, -math.inf)\n    return x, t\n",
            why="annotated parameters; elementwise functions of x; finfo and math constants",
        ),
        Invalid(
            "import torch\n\n\ndef f(x: torch.Tensor):\n    m = x.bool()\n    x[m] = False\n"
            "    y = torch.ones(3)\n    y[torch.logical_and(y > 0, y < 2)] = 7\n"
            "    y[y.eq(7)] = 1\n    return x, y\n",
            "import torch\n\n\ndef f(x: torch.Tensor):\n    m = x.bool()\n"
            "    x.masked_fill_(m, False)\n"
            "    y = torch.ones(3)\n    y.masked_fill_(torch.logical_and(y > 0, y < 2), 7)\n"
            "    y.masked_fill_(y.eq(7), 1)\n    return x, y\n",
            why=".bool(), logical_and and .eq masks",
        ),
        Invalid(
            "import torch\n\n\ndef merge(src: torch.Tensor):\n"
            "    out = torch.zeros_like(src)\n    # copy the positive entries\n"
            "    out[src > 0] = src[src > 0]\n    return out\n",
            "import torch\n\n\ndef merge(src: torch.Tensor):\n"
            "    out = torch.zeros_like(src)\n    # copy the positive entries\n"
            "    out = torch.where(src > 0, src, out)\n    return out\n",
            why="a fresh local with src's dtype: torch.where cannot be told apart",
        ),
        Invalid(
            "from torch import Tensor, zeros_like\n\n\ndef keep(src: Tensor):\n"
            "    out = src.clone()\n    hit = src > 1\n    out[hit] = src[hit]\n    return out\n",
            "from torch import Tensor, zeros_like\nimport torch\n\n\ndef keep(src: Tensor):\n"
            "    out = src.clone()\n    hit = src > 1\n    out = torch.where(hit, src, out)\n"
            "    return out\n",
            why="a clone with a named mask, used only after the write; import torch added",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._rewrites: dict[int, cst.BaseSmallStatement] = {}  # id(original Assign) -> new
        self._facts: TensorFacts | None = None

    def visit_Module(self, node: cst.Module) -> bool:
        self._facts = TensorFacts(self, ModuleIndex(self, node))
        return True

    def visit_Assign(self, node: cst.Assign) -> None:
        write = _mask_write(node)
        if write is None:
            return
        target, mask = write
        new = self._scalar_fill(node, target, mask) or self._where(node, target, mask)
        if new is not None:
            self._rewrites[id(node)] = new

    def _scalar_fill(self, node: cst.Assign, target, mask) -> cst.BaseSmallStatement | None:
        facts = self._facts
        if not facts.is_scalar(node.value):
            return None
        statement = facts.index.statement_of(node)
        if not facts.is_mask_shaped_like(mask, frozenset({bare(target)}), statement):
            return None
        if not (facts.is_tensor(target) or facts.is_tensor(mask)):
            return None
        call = cst.Call(
            func=cst.Attribute(value=target, attr=cst.Name("masked_fill_")),
            args=[_arg(mask, last=False), _arg(node.value, last=True)],
        )
        return cst.Expr(call, semicolon=node.semicolon)

    def _where(self, node: cst.Assign, target, mask) -> cst.BaseSmallStatement | None:
        """``out[m] = src[m]`` -> ``out = torch.where(m, src, out)`` under the conditions of the
        docstring."""
        gather = node.value
        if not (
            isinstance(target, cst.Name)
            and isinstance(gather, cst.Subscript)
            and isinstance(gather.value, cst.Name)
            and _single_index(gather) is not None
            and bare(_single_index(gather)) == bare(mask)
        ):
            return None
        source = gather.value
        facts = self._facts
        statement = facts.index.statement_of(node)
        origin = facts.index.source_of(target)
        if (
            origin is None
            or len(origin.bindings) != 1
            or origin.bindings[0].owner is facts.index.module
        ):
            return None
        binding = origin.bindings[0]
        if not (
            self._is_fresh_copy_of(binding.value, source)
            and _siblings_between(facts.index, binding.statement, statement) is not None
            and not self._used_between(target.value, binding.statement, statement)
            and not _captured(binding.owner, target.value)
            and facts.is_mask_shaped_like(mask, frozenset({target.value, source.value}), statement)
        ):
            return None
        self.require_import(TORCH)
        where = cst.parse_expression(
            f"torch.where({code_of(mask)}, {source.value}, {target.value})"
        )
        return cst.Assign(
            targets=[cst.AssignTarget(cst.Name(target.value))],
            value=where,
            semicolon=node.semicolon,
        )

    def _is_fresh_copy_of(self, value: cst.BaseExpression, source: cst.Name) -> bool:
        if not isinstance(value, cst.Call):
            return False
        if self._facts.torch_function(value.func) in FRESH_LIKE:
            positional = positional_arguments(value)
            no_dtype = all(
                arg.keyword is None or arg.keyword.value != "dtype" for arg in value.args
            )
            return bool(positional) and bare(positional[0].value) == source.value and no_dtype
        method = self._facts.method_of(value)
        return (
            method is not None
            and method[1] == "clone"
            and not value.args
            and bare(method[0]) == source.value
            and self._facts.is_tensor(source)
        )

    def _used_between(self, name: str, first: cst.CSTNode, last: cst.CSTNode) -> bool:
        between = _siblings_between(self._facts.index, first, last) or []
        return any(
            isinstance(node, cst.Name) and node.value == name
            for statement in between
            for node in walk_all(statement)
        )

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign):
        new = self._rewrites.get(id(original_node))
        if new is None:
            return updated_node
        self.record_rewrite()
        return new


def _may_be_mask_write(node: ast.Assign, facts: FileFacts) -> bool:
    """What ``_mask_write`` and ``TensorFacts.is_mask_shaped_like`` accept, read loosely from
    Python's tree: ``x[m] = ...`` with ``m`` a comparison, ``~``/``&``/``|``/``^`` of masks, a
    mask-making call, or a name assigned one."""
    target = node.targets[0]
    index = target.slice
    return isinstance(target.value, (ast.Name, ast.Attribute)) and _may_be_mask(index, facts, 3)


def _may_be_mask(expr: ast.expr, facts: FileFacts, depth: int) -> bool:
    if isinstance(expr, ast.Compare):
        return True
    if isinstance(expr, ast.UnaryOp):
        return isinstance(expr.op, ast.Invert) and _may_be_mask(expr.operand, facts, depth)
    if isinstance(expr, ast.BinOp):
        return isinstance(expr.op, (ast.BitAnd, ast.BitOr, ast.BitXor))
    if isinstance(expr, ast.Call):
        func = expr.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        return name in MASK_CALLS
    if isinstance(expr, ast.Name) and depth > 0:
        values = facts.values_of.get(expr.id, ())
        return any(_may_be_mask(value, facts, depth - 1) for value in values)
    return False


def _mask_write(node: cst.Assign) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """(x, m) for ``x[m] = ...`` with a single plain index and ``x`` a name or dotted name."""
    if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Subscript):
        return None
    subscript = node.targets[0].target
    index = _single_index(subscript)
    if index is None or not isinstance(subscript.value, (cst.Name, cst.Attribute)):
        return None
    if isinstance(index, (cst.Integer, cst.Float, cst.SimpleString, cst.Tuple, cst.Ellipsis)):
        return None
    return subscript.value, index


def _single_index(subscript: cst.Subscript) -> cst.BaseExpression | None:
    if len(subscript.slice) != 1:
        return None
    element = subscript.slice[0].slice
    return element.value if isinstance(element, cst.Index) and element.star is None else None


def _arg(value: cst.BaseExpression, last: bool) -> cst.Arg:
    if last:
        return cst.Arg(value)
    return cst.Arg(value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))


def _siblings_between(index: ModuleIndex, first, last) -> list[cst.CSTNode] | None:
    """The statements strictly between ``first`` and ``last`` when both are in one block."""
    place = index.block_and_index(first)
    if place is None:
        return None
    block, start = place
    for end, candidate in enumerate(block.body):
        if candidate is last and end > start:
            return list(block.body[start + 1 : end])
    return None


def _captured(function: cst.CSTNode, name: str) -> bool:
    """A nested function, lambda or class in ``function`` mentions ``name``."""
    for node in walk_all(function):
        if node is not function and isinstance(node, SCOPES_THAT_CAPTURE):
            if any(isinstance(n, cst.Name) and n.value == name for n in walk_all(node)):
                return True
    return False
