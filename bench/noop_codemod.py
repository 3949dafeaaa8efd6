"""The baseline for bench/speed.py: a libcst codemod that visits every node and changes nothing.

``python -m libcst.tool codemod -x --no-format bench.noop_codemod.NoOp TREE`` then costs what any
libcst codemod costs at least: read, parse, one transformer pass over the tree, generate code.
"""

from __future__ import annotations

import libcst as cst
from libcst.codemod import VisitorBasedCodemodCommand


class NoOp(VisitorBasedCodemodCommand):
    DESCRIPTION = "Visit every node and change nothing (benchmark baseline)."

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return updated_node
