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
    """Opcodes in difflib's form turning ``old`` into ``new``: a patience diff, as git's.

    Lines the two versions share at the start and at the end are matched first; then, between
    them, the lines that occur once in each version, in an order both keep; then the same again
    between each two of those. difflib (without its junk heuristic, which would misalign
    repeated lines such as blank lines and closing brackets) matches only what is left between
    them: on a long file whose edits are spread out it alone took half a second per diff.
    """
    opcodes: list[Opcode] = []
    old_at = new_at = 0
    for old_start, new_start, size in [*_merged(_matched_runs(old, new)), (len(old), len(new), 0)]:
        if old_at < old_start or new_at < new_start:
            tag = (
                "replace"
                if old_at < old_start and new_at < new_start
                else "delete" if old_at < old_start else "insert"
            )
            opcodes.append((tag, old_at, old_start, new_at, new_start))
        if size:
            opcodes.append(("equal", old_start, old_start + size, new_start, new_start + size))
        old_at, new_at = old_start + size, new_start + size
    return opcodes


def _matched_runs(old: list[str], new: list[str]) -> list[tuple[int, int, int]]:
    """(old start, new start, size) of each run of equal lines matched, in order."""
    runs: list[tuple[int, int, int]] = []
    # A stack, not recursion: a hostile file must not reach Python's recursion limit. It holds,
    # last first, runs already matched (3 numbers) and pairs of ranges still to match (4).
    pending: list[tuple[int, ...]] = [(0, len(old), 0, len(new))]
    while pending:
        item = pending.pop()
        if len(item) == 3:
            runs.append(item)
            continue
        old_lo, old_hi, new_lo, new_hi = item
        head = 0
        while (
            old_lo + head < old_hi
            and new_lo + head < new_hi
            and old[old_lo + head] == new[new_lo + head]
        ):
            head += 1
        tail = 0
        while (
            old_lo + head < old_hi - tail
            and new_lo + head < new_hi - tail
            and old[old_hi - 1 - tail] == new[new_hi - 1 - tail]
        ):
            tail += 1
        later: list[tuple[int, ...]] = [(old_lo, new_lo, head)] if head else []
        old_lo, new_lo, old_hi, new_hi = old_lo + head, new_lo + head, old_hi - tail, new_hi - tail
        if old_lo < old_hi and new_lo < new_hi:
            anchors = _unique_common_lines(old, old_lo, old_hi, new, new_lo, new_hi)
            for old_line, new_line in anchors:
                later += [(old_lo, old_line, new_lo, new_line), (old_line, new_line, 1)]
                old_lo, new_lo = old_line + 1, new_line + 1
            if anchors:
                later.append((old_lo, old_hi, new_lo, new_hi))
            else:
                matcher = difflib.SequenceMatcher(
                    None, old[old_lo:old_hi], new[new_lo:new_hi], autojunk=False
                )
                later += [
                    (old_lo + old_start, new_lo + new_start, size)
                    for old_start, new_start, size in matcher.get_matching_blocks()
                    if size
                ]
        if tail:
            later.append((old_hi, new_hi, tail))
        pending.extend(reversed(later))
    return runs


def _unique_common_lines(
    old: list[str], old_lo: int, old_hi: int, new: list[str], new_lo: int, new_hi: int
) -> list[tuple[int, int]]:
    """(old index, new index) of the lines that occur once in each range, the longest series
    of them in the same order in both (patience sorting)."""
    seen_in_old: dict[str, int | None] = {}
    for index in range(old_lo, old_hi):
        line = old[index]
        seen_in_old[line] = None if line in seen_in_old else index
    seen_in_new: dict[str, int | None] = {}
    for index in range(new_lo, new_hi):
        line = new[index]
        if line in seen_in_old:
            seen_in_new[line] = None if line in seen_in_new else index
    pairs = [
        (old_index, new_index)
        for line, new_index in seen_in_new.items()
        if new_index is not None and (old_index := seen_in_old[line]) is not None
    ]
    pairs.sort()
    # the longest series with new indexes increasing: piles of patience sorting
    tops: list[int] = []  # per pile length, the smallest new index ending such a series
    ends: list[int] = []  # per pile length, the pair ending it
    previous: list[int] = []  # per pair, the pair before it in its series
    for position, (_, new_index) in enumerate(pairs):
        pile = bisect.bisect_left(tops, new_index)
        if pile == len(tops):
            tops.append(new_index)
            ends.append(position)
        else:
            tops[pile] = new_index
            ends[pile] = position
        previous.append(ends[pile - 1] if pile else -1)
    series: list[tuple[int, int]] = []
    position = ends[-1] if ends else -1
    while position >= 0:
        series.append(pairs[position])
        position = previous[position]
    series.reverse()
    return series


def _merged(blocks: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Adjacent equal runs joined into one, so that no two "equal" opcodes meet."""
    merged: list[tuple[int, int, int]] = []
    for old_start, new_start, size in blocks:
        if merged:
            last_old, last_new, last_size = merged[-1]
            if last_old + last_size == old_start and last_new + last_size == new_start:
                merged[-1] = (last_old, last_new, last_size + size)
                continue
        merged.append((old_start, new_start, size))
    return merged
