"""Map line numbers between two versions of a file, so findings point into the user's file."""

from __future__ import annotations

import bisect
import difflib
from dataclasses import replace

from codemods._base import Finding, VerifyAdjustment


class LineMap:
    """Maps lines of ``new`` back to lines of ``old`` using a line diff, and on through ``then``
    (a map from ``old``'s lines to an older version's) when given.

    Lines inside unchanged blocks map exactly; a line inside a rewritten block maps to the first
    line of the block it replaced, which is where a reader would look.
    """

    def __init__(self, new: str, old: str, then: "LineMap | None" = None) -> None:
        self._identity = new == old
        self._then = then
        # difflib's (tag, old_start, old_end, new_start, new_end), and the lines of ``new``
        self.opcodes: list[tuple[str, int, int, int, int]] = []
        self.new_lines: list[str] = []
        self._starts: list[int] = []  # each opcode's new_start, for bisect
        if self._identity:
            return
        self.new_lines = new.splitlines()
        self.opcodes = line_opcodes(old.splitlines(), self.new_lines)
        self._starts = [new_start for *_, new_start, _new_end in self.opcodes]

    def line(self, new_line: int) -> int:
        line = self._own_line(new_line)
        return line if self._then is None else self._then.line(line)

    def _own_line(self, new_line: int) -> int:
        if self._identity or not self.opcodes:
            return new_line
        index = max(0, bisect.bisect_right(self._starts, new_line - 1) - 1)
        tag, old_start, _old_end, new_start, _new_end = self.opcodes[index]
        if tag == "equal":
            return old_start + (new_line - 1 - new_start) + 1
        return old_start + 1

    def finding(self, finding: Finding) -> Finding:
        return replace(finding, line=self.line(finding.line))

    def adjustment(self, adjustment: VerifyAdjustment) -> VerifyAdjustment:
        first = self.line(adjustment.line)
        return replace(adjustment, line=first, end_line=max(first, self.line(adjustment.end_line)))


Opcode = tuple[str, int, int, int, int]


def line_opcodes(old: list[str], new: list[str]) -> list[Opcode]:
    """difflib's opcodes turning ``old`` into ``new``, with the lines the two share at the start
    and at the end matched to each other first.

    difflib without its junk heuristic (which would misalign repeated lines such as blank lines
    and closing brackets) is slow on long files; an edit changes a few places, so most of a file
    is its common head and tail, and only the part between them is handed to difflib.
    """
    size = min(len(old), len(new))
    head = 0
    while head < size and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < size - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    old_middle, new_middle = old[head : len(old) - tail], new[head : len(new) - tail]
    middle = difflib.SequenceMatcher(None, old_middle, new_middle, autojunk=False).get_opcodes()
    # The middle starts and ends with lines that differ, so it neither starts nor ends with an
    # "equal" block: no two "equal" blocks meet.
    opcodes: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    opcodes += [
        (tag, old_start + head, old_end + head, new_start + head, new_end + head)
        for tag, old_start, old_end, new_start, new_end in middle
    ]
    if tail:
        opcodes.append(("equal", len(old) - tail, len(old), len(new) - tail, len(new)))
    return opcodes
