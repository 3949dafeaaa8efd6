"""Unified diffs of what `apply` would write, exactly as `git apply` / `patch -p1` expect."""

from __future__ import annotations

import difflib


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
