"""Unified diffs of what `apply` would write, exactly as `git apply` / `patch -p1` expect."""

from __future__ import annotations

import difflib

from .engine import FileResult


def unified_diff(old: str, new: str, path: str, context: int = 3) -> str:
    """``--- a/path`` / ``+++ b/path`` diff of two texts; line endings are kept as they are."""
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    lines = []
    for line in difflib.unified_diff(
        old_lines, new_lines, f"a/{path}", f"b/{path}", n=context, lineterm="\n"
    ):
        if not line.endswith(("\n", "\r")):
            line += "\n\\ No newline at end of file\n"
        lines.append(line)
    return "".join(lines)


def result_diff(result: FileResult, path: str) -> str:
    """The diff of what ``apply`` would write for ``result``: a unified diff of the file, or for a
    notebook one per changed code cell (``--- a/nb.ipynb:cell 3``, as nbdime and ruff show it),
    never a diff of the raw JSON."""
    assert result.source is not None and result.new_text is not None
    notebook = result.source.notebook
    if notebook is None:
        return unified_diff(result.source.text, result.new_text, path)
    parts = []
    for cell, old, new in notebook.changed_cells(result.new_text):
        name = f"{path}:cell {cell}" if cell is not None else f"{path}:new cell 1"
        parts.append(_cell_diff(old, new, name, cell is None))
    return "".join(parts)


def _cell_diff(old: str, new: str, name: str, added: bool) -> str:
    """A unified diff of one cell's source; its last line may have no newline, as in Jupyter."""
    old_lines = [line if line.endswith("\n") else line + "\n" for line in old.splitlines(True)]
    new_lines = [line if line.endswith("\n") else line + "\n" for line in new.splitlines(True)]
    before = "/dev/null" if added else f"a/{name}"
    return "".join(
        difflib.unified_diff(old_lines, new_lines, before, f"b/{name}", n=3, lineterm="\n")
    )
