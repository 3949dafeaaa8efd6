"""Code generation as libcst's, without its cost of offering to record positions, and without
generating again the statements a pipeline's earlier trees already had.

libcst's nodes generate their code inside ``with state.record_syntactic_position(node):``, a
generator-based context manager that does nothing unless positions are recorded: over a quarter
of generating a module's code (distributed_test.py: 0.18 s, 0.13 s with a shared no-op context
manager). tests/engine/test_fast_paths.py checks the code is libcst's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
from typing import Iterator, NamedTuple

import libcst as cst
from libcst._nodes.internal import CodegenState  # private: test_fast_paths pins it

from . import plain_libcst

_NOTHING_RECORDED = contextlib.nullcontext()


@dataclasses.dataclass
class _PlainCodegenState(CodegenState):
    statements: "StatementCode | None" = None

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return _NOTHING_RECORDED

    # what ``StatementCode`` asks of a code generation state
    def mark(self) -> int:
        return len(self.tokens)

    def generated_since(self, mark: int, statement: cst.CSTNode) -> "Generated":
        return Generated(tuple(self.tokens[mark:]))

    def replay(self, generated: "Generated") -> bool:
        self.tokens.extend(generated.tokens)
        return True


class Generated(NamedTuple):
    """What one statement's code generation gave: its tokens, and, when it recorded positions,
    what the recorder needs to give its nodes their ranges again (a tuple: one per statement
    is made, and a frozen dataclass is several times slower to make)."""

    tokens: tuple[str, ...]
    ranges: object = None


class StatementCode:
    """What each statement's code generation gave, by the indentation around it, kept over the
    trees of one pipeline run.

    A rule's output keeps every node it did not change (``visit_without_copying``), so after an
    edit only the statements on the path to it are new objects: the others' code is known. The
    code of a statement depends only on the statement, the indentation around it and the
    module's default indent and newline (libcst's ``CodegenState``), which make the key. On
    distributed_test.py, 13 edits: 1.6 s of code generation before. The position recorder
    (migrate/fastcst/metadata.py) keeps the ranges of simple statements too."""

    def __init__(self) -> None:
        self._known: dict[cst.CSTNode, dict[tuple, Generated]] = {}

    def clear(self) -> None:
        """Forget everything (the position recordings kept refer back to this object)."""
        self._known.clear()

    def generate(self, statement: cst.CSTNode, state) -> None:
        key = (state.default_indent, state.default_newline, *state.indent_tokens)
        known = self._known.get(statement)
        generated = known.get(key) if known is not None else None
        if generated is not None and state.replay(generated):
            return
        mark = state.mark()
        (_LIBCSTS_CODEGEN.get(type(statement)) or _libcsts_codegen(type(statement)))(
            statement, state
        )
        self._known.setdefault(statement, {})[key] = state.generated_since(mark, statement)


def module_code(module: cst.Module, statements: StatementCode | None = None) -> str:
    """``module.code``; with ``statements``, the statements it has seen are not generated again."""
    if plain_libcst():
        return module.code
    return "".join(generated_state(module, _PlainCodegenState, statements).tokens)


def generated_state(module: cst.Module, state_type: type, statements: StatementCode | None):
    """A new ``state_type`` state (a ``CodegenState`` with a ``statements`` field) that
    ``module``'s code generation went through, with ``statements``."""
    state = state_type(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        statements=statements,
    )
    with _statements_from(statements):
        module._codegen(state)
    return state


def node_code(node: cst.CSTNode, default_indent: str = "    ", default_newline: str = "\n") -> str:
    """``module.code_for_node(node)`` for a module with these defaults (a new module's, by
    default)."""
    if plain_libcst():
        module = cst.Module(body=[], default_indent=default_indent, default_newline=default_newline)
        return module.code_for_node(node)
    state = _PlainCodegenState(default_indent=default_indent, default_newline=default_newline)
    node._codegen(state)
    return "".join(state.tokens)


def _statement_codegen(self: cst.CSTNode, state: CodegenState, **kwargs) -> None:
    statements = getattr(state, "statements", None)
    if statements is None or kwargs:
        _libcsts_codegen(type(self))(self, state, **kwargs)
    else:
        statements.generate(self, state)


@contextlib.contextmanager
def _statements_from(statements: StatementCode | None) -> Iterator[None]:
    """While a module's code is generated with ``statements``, each statement's code generation
    goes through it. libcst's is put back after (and any other code generation state, such as
    the position recorder's, is passed straight to libcst's meanwhile)."""
    if statements is None:
        yield
        return
    for statement_type in _STATEMENT_TYPES:
        statement_type._codegen = _statement_codegen
    try:
        yield
    finally:
        for statement_type, own in _OWN_CODEGEN.items():
            if own is None:
                del statement_type._codegen  # back to the one it inherits
            else:
                statement_type._codegen = own


_STATEMENT_TYPES = tuple(
    c
    for c in vars(cst).values()
    if isinstance(c, type)
    and issubclass(c, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
    and not inspect.isabstract(c)
)
# libcst's code generation of each statement type, taken before any is replaced: its own
# method (None: inherited from CSTNode, today for all of them), and the one it runs
_OWN_CODEGEN = {c: vars(c).get("_codegen") for c in _STATEMENT_TYPES}
_LIBCSTS_CODEGEN = {c: c._codegen for c in _STATEMENT_TYPES}


def _libcsts_codegen(node_type: type):
    for base in node_type.__mro__:  # (a subclass of a statement type inherits the replacement)
        if base in _LIBCSTS_CODEGEN:
            return _LIBCSTS_CODEGEN[base]
    return cst.CSTNode._codegen
