"""Code generation as libcst's, without its cost of offering to record positions.

libcst's nodes generate their code inside ``with state.record_syntactic_position(node):``, a
generator-based context manager that does nothing unless positions are recorded: over a quarter
of generating a module's code (distributed_test.py: 0.18 s, 0.13 s with a shared no-op context
manager). tests/engine/test_fast_paths.py checks the code is libcst's.
"""

from __future__ import annotations

import contextlib
import dataclasses

import libcst as cst
from libcst._nodes.internal import CodegenState  # private: test_fast_paths pins it

_NOTHING_RECORDED = contextlib.nullcontext()


@dataclasses.dataclass
class _PlainCodegenState(CodegenState):
    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return _NOTHING_RECORDED


def module_code(module: cst.Module) -> str:
    """``module.code``."""
    return node_code(module, module.default_indent, module.default_newline)


def node_code(node: cst.CSTNode, default_indent: str = "    ", default_newline: str = "\n") -> str:
    """``module.code_for_node(node)`` for a module with these defaults (a new module's, by
    default)."""
    state = _PlainCodegenState(default_indent=default_indent, default_newline=default_newline)
    node._codegen(state)
    return "".join(state.tokens)
