"""Migrate the script's project into a temporary copy, with the same rules `apply` uses."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import codemods

from ..discover import Discovery, discover
from ..engine import FileResult, Selection, migrate_file, migrate_files
from .shadow import Shadow

NAMED_FILES = 12  # a note names this many migrated files, then counts the rest


@dataclass
class MigratedCopy:
    script: Path  # the migrated script, in the shadow
    changed: dict[str, dict[str, int]] = field(
        default_factory=dict
    )  # relative path -> rule -> edits
    errors: list[str] = field(default_factory=list)  # "path: message" for files left unmigrated
    findings: int = 0  # TPU2xx findings a human still has to look at
    # what the original run repeats (see original_side_adjustments), with absolute paths
    adjustments: list[dict] = field(default_factory=list)
    migrated: set[str] = field(default_factory=set)  # real paths of the user's files migrated

    def notes(self, original_root: Path) -> list[str]:
        notes = []
        if self.changed:
            files = changed_files_text(self.changed, NAMED_FILES)
            notes.append(f"migrated into a temporary shadow of {original_root}: {files}")
        else:
            notes.append(f"the migration changed no file of {original_root}")
        if self.findings:
            notes.append(
                f"the migration left {self.findings} finding(s) for a human (`tpu-migrate check`)"
            )
        notes.extend(f"not migrated: {error}" for error in self.errors)
        notes.extend(numerics_notes(code for rules in self.changed.values() for code in rules))
        notes.extend(adjustment_notes(self.adjustments, original_root))
        return notes


def changed_files_text(changed: dict[str, dict[str, int]], most: int | None = None) -> str:
    """``a.py (TPU101x2, TPU102x1), b.py (...)``: at most ``most`` files named, the rest counted."""
    files = sorted(changed.items())
    text = ", ".join(
        f"{path} ({', '.join(f'{code}x{n}' for code, n in sorted(rules.items()))})"
        for path, rules in files[:most]
    )
    if most is not None and len(files) > most:
        text += f" and {len(files) - most} more file(s)"
    return text


def numerics_notes(applied_codes) -> list[str]:
    """One note per applied rule that changes numerics on purpose (its NUMERICS text)."""
    notes = []
    for code in sorted(set(applied_codes)):
        rule = codemods.rule_by_code(code)
        if rule.NUMERICS:
            notes.append(f"{code} changes numerics on purpose: {rule.NUMERICS}")
    return notes


def rules_applied_to(script: Path) -> list[str]:
    """The rules the migration applies to ``script`` (for a migrated file made elsewhere)."""
    result = migrate_file(script, Selection.from_options())
    return sorted(result.applied) if result.changed else []


def adjustments_for_given_migration(
    script: Path, migrated: Path
) -> tuple[list[dict], list[str], list[str]]:
    """What the original run repeats when the migrated file was made elsewhere (``--migrated``),
    notes about it, and the rules whose changes the migrated file lacks.

    The rules' adjustments of ``script`` count only when ``migrated`` already has those rules'
    edits: running the rule on it changes nothing more (rules are idempotent). A migration made
    with the rule ignored (``apply --ignore TPU113``) keeps the original's behaviour, so the
    original run is then left as it is.
    """
    result = migrate_file(script, Selection.from_options())
    adjustments = _with_paths(result, script)
    codes = sorted({adjustment["code"] for adjustment in adjustments})
    if not codes:
        return [], [], []
    pending = migrate_file(migrated, Selection.from_options(select=codes)).applied
    missing = [code for code in codes if pending.get(code)]
    notes = [
        f"{code} would still edit {migrated.name}: the migrated script does not have its changes, "
        "so the original run is not adjusted for them"
        for code in missing
    ]
    kept = [adjustment for adjustment in adjustments if adjustment["code"] not in missing]
    return kept, notes + adjustment_notes(kept, script.parent), missing


def adjustment_notes(adjustments: list[dict], original_root: Path) -> list[str]:
    """One note per rule whose behaviour change the original run repeats."""
    places: dict[tuple[str, str], list[str]] = {}
    for adjustment in adjustments:
        line = adjustment.get("place", adjustment["line"])  # "cell 5:line 3" in a notebook
        where = f"{_relative(Path(adjustment['path']), original_root)}:{line}"
        places.setdefault((adjustment["code"], adjustment["kind"]), []).append(where)
    return [
        f"the original run repeats what {code} changed, so both runs see the same batches: "
        f"{ADJUSTMENT_WORDING.get(kind, kind)} at {', '.join(where)}"
        for (code, kind), where in sorted(places.items())
    ]


# How a note names what the bootstrap does for each adjustment kind.
ADJUSTMENT_WORDING = {"drop_last": "drop_last=True (the last partial batch is skipped)"}


def _with_paths(result: FileResult, path: Path) -> list[dict]:
    placed = []
    for adjustment in result.adjustments:
        item = {**adjustment.to_dict(), "path": str(path.resolve())}
        cell = result.cell_of(adjustment.line)
        if cell is not None:
            item["place"] = f"cell {cell[0]}:line {cell[1]}"
        placed.append(item)
    return placed


def migrate_copy(root: Path, script: Path, shadow: Shadow, files=None) -> MigratedCopy:
    """Migrate the Python files of ``root`` (the user's, read only) into ``shadow``.

    ``files`` narrows the files to migrate (default: every Python file ``discover`` finds under
    ``root``); a file no rule changes stays a link to the user's file.
    """
    copy = MigratedCopy(script=shadow.path(script))
    found = discover([root]) if files is None else Discovery(files=list(files))
    for path, message in found.problems:
        copy.errors.append(f"{_relative(path, root)}: {message}")
    placed: dict[Path, bytes | None] = {}
    for result in migrate_files(found.files, Selection.from_options(), jobs=1):
        path = Path(os.path.abspath(result.path))
        relative = _relative(path, root)
        copy.migrated.add(os.path.realpath(path))
        placed[path] = None
        if result.error:
            copy.errors.append(f"{relative}:{result.error_line}: {result.error}")
            continue
        copy.findings += len(result.findings)
        copy.adjustments += _with_paths(result, path)
        if result.changed:
            placed[path] = result.new_bytes()
            copy.changed[relative] = dict(result.applied)
    shadow.add_files(placed)
    return copy


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()
