"""Jupyter notebooks as one program: their code cells, in order, migrated like a script.

A notebook is read as JSON and its code cells are joined into one Python *program*, so that a
device chosen in cell 2 and used in cell 5 is followed by the rules like any script's. Each code
cell starts with a marker statement, ``__tpu_migrate_cell__(N)``, at the top level: a statement
(not a comment) so that a rule inserting code before a cell's first statement inserts it after
the marker, in that cell. IPython lines (``%magic``, ``!shell``, ``x = !cmd``, ``obj?``) become
``__tpu_migrate_magic__(K)`` statements at their indentation and are never parsed as Python; a
cell whose cell magic does not run Python (``%%bash``, ``%%writefile``) is left out altogether.

After the rules have run, the program is split back at the markers. What a rule put before the
first marker (the imports it added at the head of the module) goes into the first code cell that
imports torch (or a torch package) at its top level, after that cell's leading imports, or into a
new first code cell when no cell does. Every marker and placeholder must come back once, in order; otherwise the notebook is
reported and left as it was.

Writing changes only the ``source`` of the cells that changed: the JSON is written again with
the indentation, key order, escaping and final newline it was read with, and a notebook whose
JSON cannot be reproduced that way byte for byte is not rewritten. Outputs, execution counts,
ids, metadata, attachments and markdown cells are never touched.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from .source import SourceError

CELL_MARKER = "__tpu_migrate_cell__({})"
MAGIC_MARKER = "__tpu_migrate_magic__({})"
CELL_MARKER_LINE = re.compile(r"^__tpu_migrate_cell__\((\d+)\)$")
MAGIC_MARKER_LINE = re.compile(r"^([ \t]*)__tpu_migrate_magic__\((\d+)\)$")
# Cell magics whose body is Python that IPython runs in the notebook's namespace.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
# IPython escapes at the start of a line, and ``x = !cmd`` / ``x = %magic`` assignments.
MAGIC_LINE = re.compile(r"^[ \t]*(?:[%!?]|[A-Za-z_][\w., ]*=[ \t]*[%!])")
HELP_LINE = re.compile(r"^[ \t]*[\w.]+\?{1,2}[ \t]*$")
IMPORT_LINE = re.compile(r"^(?:import|from)[ \t]+\S")
TORCH_IMPORT = re.compile(r"^(?:import|from)[ \t]+torch")  # torch, torch_xla, torchvision...
IMPORTS_CELL_ID = "tpu-migrate-imports"


@dataclass
class CodeCell:
    index: int  # position in the notebook's cells, from 0
    lines: list[str]  # the cell's source split into lines, newlines kept
    in_program: bool  # False: a cell magic whose body is not Python


@dataclass
class Notebook:
    """A parsed notebook and the program its code cells make."""

    data: dict
    style: tuple  # (indent, ensure_ascii, final newline): how to write the JSON back
    cells: list[CodeCell]
    program: str = ""
    magics: list[str] = field(default_factory=list)  # the original text of each placeholder
    magic_places: list[tuple[int, int]] = field(default_factory=list)  # (cell, line), from 1
    # program line (from 1) -> (cell number from 1, line within the cell from 1); 0: a marker
    locations: list[tuple[int, int]] = field(default_factory=list)

    # ------------------------------------------------------------------ reading
    @classmethod
    def parse(cls, raw: bytes) -> "Notebook":
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise SourceError(f"notebook is not UTF-8: {exc.reason} at byte {exc.start}")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SourceError(f"notebook is not valid JSON: {exc.msg}", exc.lineno)
        _validate(data)
        notebook = cls(data=data, style=_style_of(text, data), cells=[])
        for index, cell in enumerate(data["cells"]):
            if cell["cell_type"] == "code":
                lines = _source_text(cell).splitlines(keepends=True)
                notebook.cells.append(CodeCell(index, lines, _is_python(lines)))
        notebook._build_program()
        return notebook

    def _build_program(self) -> None:
        out: list[str] = []
        for cell in self.cells:
            if not cell.in_program:
                continue
            out.append(CELL_MARKER.format(cell.index) + "\n")
            self.locations.append((cell.index + 1, 0))
            for number, line in enumerate(cell.lines, start=1):
                body = line.rstrip("\r\n")
                ending = line[len(body) :] or "\n"
                if _is_magic(body):
                    indent = body[: len(body) - len(body.lstrip(" \t"))]
                    out.append(indent + MAGIC_MARKER.format(len(self.magics)) + ending)
                    self.magics.append(body)
                    self.magic_places.append((cell.index + 1, number))
                else:
                    out.append(body + ending)
                self.locations.append((cell.index + 1, number))
        self.program = "".join(out)

    def location(self, line: int) -> tuple[int, int]:
        """(cell number from 1, line in the cell from 1) of a line of the program."""
        if not self.locations:
            return 1, 1
        cell, in_cell = self.locations[min(max(line, 1), len(self.locations)) - 1]
        return cell, max(in_cell, 1)

    def skipped(self) -> list[str]:
        """What a run of the program leaves out: IPython lines and non-Python cells."""
        lines = [
            f"cell {c}, line {n}: {text}" for (c, n), text in zip(self.magic_places, self.magics)
        ]
        lines += [
            f"cell {cell.index + 1}: a {cell.lines[0].split()[0]} cell"
            for cell in self.cells
            if not cell.in_program
        ]
        return lines

    def runnable(self) -> str:
        """The program as plain Python, line for line: each marker and IPython line is a
        ``pass`` (at its indentation), so line numbers stay those of the program."""
        lines = []
        for line in self.program.splitlines(keepends=True):
            body = line.rstrip("\r\n")
            cell = CELL_MARKER_LINE.match(body)
            magic = MAGIC_MARKER_LINE.match(body)
            if cell:
                body = f"pass  # cell {int(cell.group(1)) + 1}"
            elif magic:
                body = f"{magic.group(1)}pass  # IPython: {self.magics[int(magic.group(2))]}"
            lines.append(body + line[len(line.rstrip("\r\n")) :])
        return "".join(lines)

    # ------------------------------------------------------------------ writing
    def cell_sources(self, program: str) -> dict[int, str]:
        """The new source of every code cell of the program, by cell index; a new imports cell
        has index -1. Raises SourceError when the program lost a marker or a placeholder."""
        head: list[str] = []
        by_cell: dict[int, list[str]] = {}
        current: list[str] = head
        order: list[int] = []
        magic = 0
        for line in program.splitlines(keepends=True):
            body = line.rstrip("\r\n")
            found = CELL_MARKER_LINE.match(body)
            if found:
                current = by_cell.setdefault(int(found.group(1)), [])
                order.append(int(found.group(1)))
                continue
            placeholder = MAGIC_MARKER_LINE.match(body)
            if placeholder:
                if int(placeholder.group(2)) != magic:
                    raise SourceError("a rule moved an IPython line of the notebook: not rewritten")
                line = self.magics[magic] + line[len(body) :]
                magic += 1
            current.append(line)
        expected = [cell.index for cell in self.cells if cell.in_program]
        if order != expected or magic != len(self.magics):
            raise SourceError("a rule moved a cell boundary of the notebook: not rewritten")
        sources = {index: lines for index, lines in by_cell.items()}
        # The rules see only the imports above the first marker: one a cell already has is not
        # added again.
        present = {
            line.strip() for lines in by_cell.values() for line in lines if IMPORT_LINE.match(line)
        }
        head = [line for line in head if line.strip() and line.strip() not in present]
        if head:
            target = self._imports_cell(sources)
            if target is None:
                sources[-1] = head
            else:
                lines = sources[target]
                at = _after_leading_imports(lines)
                sources[target] = lines[:at] + head + lines[at:]
        return {index: self._as_cell_text(index, lines) for index, lines in sources.items()}

    def _imports_cell(self, sources: dict[int, list[str]]) -> int | None:
        for cell in self.cells:
            if cell.in_program and any(TORCH_IMPORT.match(line) for line in sources[cell.index]):
                return cell.index
        return None

    def _as_cell_text(self, index: int, lines: list[str]) -> str:
        """The lines joined as the cell had them: without a final newline when it had none."""
        text = "".join(lines)
        original = next((c for c in self.cells if c.index == index), None)
        ends_bare = original is None or not original.lines or not original.lines[-1].endswith("\n")
        return text[:-1] if ends_bare and text.endswith("\n") else text

    def render(self, program: str) -> bytes:
        """The notebook's bytes with its code cells' sources taken from ``program``."""
        sources = self.cell_sources(program)
        data = self.data
        cells = list(data["cells"])
        for index, text in sources.items():
            if index < 0:
                continue
            cell = dict(cells[index])
            if _source_text(cell) != text:
                cell["source"] = _as_source_field(text, cell["source"])
                cells[index] = cell
        if -1 in sources:
            cells.insert(0, self._new_cell(sources[-1], cells))
        return _dumps({**data, "cells": cells}, self.style)

    def changed_cells(self, program: str) -> list[tuple[int | None, str, str]]:
        """(cell number from 1, or None for a new cell; old source; new source) of every code
        cell ``program`` changes, in notebook order."""
        sources = self.cell_sources(program)
        changed: list[tuple[int | None, str, str]] = []
        if -1 in sources:
            changed.append((None, "", sources[-1]))
        for cell in self.cells:
            new = sources.get(cell.index)
            if new is not None and new != "".join(cell.lines):
                changed.append((cell.index + 1, "".join(cell.lines), new))
        return changed

    def _new_cell(self, text: str, cells: list[dict]) -> dict:
        """A code cell shaped like the notebook's others (same keys, in the same order)."""
        template = next((c for c in cells if c.get("cell_type") == "code"), None)
        keys = list(template) if template else ["cell_type", "execution_count", "metadata"]
        values = {
            "cell_type": "code",
            "execution_count": None,
            "id": IMPORTS_CELL_ID,
            "metadata": {},
            "outputs": [],
            "source": _as_source_field(text, template["source"] if template else []),
        }
        if "id" not in keys and _has_cell_ids(self.data):
            keys.append("id")
        for key in ("outputs", "source"):
            if key not in keys:
                keys.append(key)
        return {key: values[key] for key in keys if key in values}


def _validate(data: object) -> None:
    """The parts of nbformat 4 this module reads; anything else is left as it is."""
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise SourceError("not a Jupyter notebook: no list of cells")
    if not isinstance(data.get("nbformat"), int) or data["nbformat"] < 4:
        raise SourceError(
            f"not an nbformat 4 notebook (nbformat {data.get('nbformat')!r}): convert it with "
            "`jupyter nbconvert --to notebook --nbformat 4`"
        )
    for number, cell in enumerate(data["cells"], start=1):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            raise SourceError(f"cell {number} has no cell_type")
        source = cell.get("source")
        if not isinstance(source, str) and not (
            isinstance(source, list) and all(isinstance(part, str) for part in source)
        ):
            raise SourceError(f"cell {number}: source is neither a string nor a list of strings")


def _style_of(text: str, data: dict) -> tuple:
    """How the JSON was written, if writing ``data`` again that way gives ``text`` back."""
    match = re.search(r"\n([ \t]+)\"", text)
    indent = match.group(1) if match else None
    final_newline = text.endswith("\n")
    for ensure_ascii in (False, True):
        style = (indent, ensure_ascii, final_newline)
        if _dumps(data, style).decode("utf-8") == text:
            return style
    return ()  # not reproducible: the notebook can be read, not rewritten


def _dumps(data: dict, style: tuple) -> bytes:
    if not style:
        raise SourceError(
            "the notebook's JSON layout cannot be reproduced exactly (unusual indentation or "
            "escaping): not rewritten; save it once from Jupyter and run again"
        )
    indent, ensure_ascii, final_newline = style
    text = json.dumps(data, indent=indent, ensure_ascii=ensure_ascii)
    return (text + ("\n" if final_newline else "")).encode("utf-8")


def _source_text(cell: dict) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def _as_source_field(text: str, like: str | list) -> str | list[str]:
    """``text`` in the form the cell stored its source in: one string, or a list of lines."""
    return text if isinstance(like, str) else text.splitlines(keepends=True)


def _is_python(lines: list[str]) -> bool:
    """False for a cell whose cell magic runs something other than Python in the notebook."""
    first = lines[0].strip() if lines else ""
    if not first.startswith("%%"):
        return True
    name = first[2:].split(maxsplit=1)
    return bool(name) and name[0] in PYTHON_CELL_MAGICS


def _is_magic(line: str) -> bool:
    return bool(MAGIC_LINE.match(line) or HELP_LINE.match(line))


def _after_leading_imports(lines: list[str]) -> int:
    """Where to add imports in a cell: after the last import of its first run of imports
    (blank lines, comments and IPython lines may come between them)."""
    at = 0
    open_import = False  # inside ``from x import (`` ... ``)``
    for number, line in enumerate(lines):
        body = line.strip()
        if open_import:
            open_import = ")" not in body
            at = number + 1
        elif IMPORT_LINE.match(line):
            open_import = "(" in body and ")" not in body
            at = number + 1
        elif body and not body.startswith("#") and not MAGIC_LINE.match(line):
            break
    return at


def _has_cell_ids(data: dict) -> bool:
    return (data.get("nbformat"), data.get("nbformat_minor", 0)) >= (4, 5)
