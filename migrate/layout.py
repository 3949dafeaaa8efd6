"""Lay out the statements a migration wrote the way black would, leaving every other line alone.

Rules build new code from nodes, so a rewritten call can end up longer than any line the author
wrote. Only statements that contain a new line over the limit are re-formatted, and only those
statements; the limit is the longer of black's default and the file's own longest line.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from .linemap import line_opcodes
from .fastcst.metadata import positions_of

BLACK_DEFAULT = 88


def wrap_long_new_lines(original: str, new: str) -> str:
    old_lines = original.splitlines()
    new_lines = new.splitlines(keepends=True)
    limit = max([BLACK_DEFAULT, *(len(line) for line in old_lines)])
    long_new = _long_new_line_numbers(old_lines, new_lines, limit)
    if not long_new:
        return new
    spans = _statement_spans(new, long_new)
    newline = "\r\n" if new_lines and new_lines[0].endswith("\r\n") else "\n"
    for first, last, header in sorted(spans, reverse=True):
        block = "".join(new_lines[first - 1 : last])
        formatted = _format_block(block, limit, header, newline)
        if formatted is not None:
            new_lines[first - 1 : last] = formatted.splitlines(keepends=True)
    return "".join(new_lines)


def _long_new_line_numbers(old_lines: list[str], new_lines: list[str], limit: int) -> set[int]:
    stripped = [line.rstrip("\r\n") for line in new_lines]
    numbers = set()
    for tag, _i1, _i2, j1, j2 in line_opcodes(old_lines, stripped):
        if tag in ("replace", "insert"):
            numbers.update(j + 1 for j in range(j1, j2) if len(stripped[j]) > limit)
    return numbers


def _statement_spans(text: str, line_numbers: set[int]) -> set[tuple[int, int, bool]]:
    """(first line, last line, is_compound_header) of the innermost statement holding each line."""
    positions = positions_of(cst.parse_module(text))
    spans: dict[int, tuple[int, int, bool]] = {}
    for node in positions:
        if isinstance(node, cst.SimpleStatementLine):
            position = positions[node]
            span = (position.start.line, position.end.line, False)
        elif isinstance(node, (cst.For, cst.While, cst.If, cst.With)):
            if not isinstance(node.body, cst.IndentedBlock):
                continue
            # the header ends on the ":" line
            span = (positions[node].start.line, positions[node.body].start.line, True)
        else:
            continue
        for number in line_numbers:
            if span[0] <= number <= span[1]:
                best = spans.get(number)
                if best is None or span[1] - span[0] < best[1] - best[0]:
                    spans[number] = span
    return set(spans.values())


def _format_block(block: str, limit: int, header: bool, newline: str) -> str | None:
    """black-format one statement (or a compound statement's header); None if black declines."""
    import black  # here: most runs write no long line, and black takes long to import

    text = block.replace("\r\n", "\n")
    indent = text[: len(text) - len(text.lstrip(" \t"))]
    source = textwrap.dedent(text)
    if header:
        source = source.rstrip("\n") + "\n    pass\n"
    mode = black.Mode(
        line_length=max(limit - len(indent.expandtabs()), 40), string_normalization=False
    )
    try:
        formatted = black.format_str(source, mode=mode)
    except Exception:  # black rejects odd-but-valid code: keep the long line then
        return None
    if header:
        formatted = formatted[: formatted.rstrip("\n").rfind("\n") + 1]
    lines = [
        indent + line if line.strip() else line for line in formatted.splitlines(keepends=True)
    ]
    return "".join(lines).replace("\n", newline)


def realign_continuation_lines(original: str, new: str) -> str:
    """Keep visually aligned continuation lines aligned when a rewrite moved their bracket.

    ``torch.save({"model": ...,`` becoming ``xm.save({"model": ...,`` moves the ``{`` three
    columns left; the untouched lines below it were aligned under it, so they move with it.
    """
    old_lines = original.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    for tag, i1, i2, j1, j2 in line_opcodes(old_lines, new_lines):
        if tag != "replace" or i2 - i1 != j2 - j1:
            continue
        for offset in range(i2 - i1):
            old_index, new_index = i1 + offset, j1 + offset
            old_col = _open_bracket_column(old_lines[old_index])
            new_col = _open_bracket_column(new_lines[new_index])
            if old_col is None or new_col is None or old_col == new_col:
                continue
            _shift_aligned_block(old_lines, new_lines, old_index, new_index, old_col, new_col)
    return "".join(new_lines)


def _shift_aligned_block(old_lines, new_lines, old_index, new_index, old_col, new_col) -> None:
    delta = new_col - old_col
    depth = _bracket_depth(old_lines[old_index])
    follower = 1
    while depth > 0 and old_index + follower < len(old_lines):
        old_line = old_lines[old_index + follower]
        new_position = new_index + follower
        if new_position >= len(new_lines) or new_lines[new_position] != old_line:
            return  # the lines below were rewritten too: leave them to the rule
        indent = len(old_line) - len(old_line.lstrip(" "))
        if follower == 1 and indent != old_col + 1:
            return  # not aligned under the bracket (a hanging indent): nothing to follow
        if old_line.strip() and indent >= old_col + 1:
            new_lines[new_position] = " " * (indent + delta) + old_line.lstrip(" ")
        depth += _bracket_depth(old_line)
        follower += 1


def _code_characters(line: str):
    """(column, character) of the code in one line: strings and the comment skipped."""
    quote = None
    column = 0
    while column < len(line):
        char = line[column]
        if quote:
            if char == "\\":
                column += 1
            elif line.startswith(quote, column):
                column += len(quote) - 1
                quote = None
        elif char in "'\"":
            quote = line[column : column + 3] if line.startswith(char * 3, column) else char
            column += len(quote) - 1
        elif char == "#":
            return
        else:
            yield column, char
        column += 1


def _open_bracket_column(line: str) -> int | None:
    """Column of the innermost bracket still open at the end of ``line``."""
    stack: list[int] = []
    for column, char in _code_characters(line):
        if char in "([{":
            stack.append(column)
        elif char in ")]}" and stack:
            stack.pop()
    return stack[-1] if stack else None


def _bracket_depth(line: str) -> int:
    return sum((c in "([{") - (c in ")]}") for _, c in _code_characters(line))
