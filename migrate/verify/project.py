"""Migrate the script's project into a temporary copy, with the same rules `apply` uses."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import codemods

from ..discover import SKIPPED_DIRS, discover
from ..engine import Selection, migrate_file, migrate_files


@dataclass
class MigratedCopy:
    root: Path  # the copy of the project root
    script: Path  # the migrated script inside it
    changed: dict[str, dict[str, int]] = field(
        default_factory=dict
    )  # relative path -> rule -> edits
    errors: list[str] = field(default_factory=list)  # "path: message" for files left unmigrated
    findings: int = 0  # TPU2xx findings a human still has to look at

    def notes(self, original_root: Path) -> list[str]:
        notes = []
        if self.changed:
            files = ", ".join(
                f"{path} ({', '.join(f'{code}x{n}' for code, n in sorted(rules.items()))})"
                for path, rules in sorted(self.changed.items())
            )
            notes.append(f"migrated a temporary copy of {original_root}: {files}")
        else:
            notes.append(f"the migration changed no file of {original_root}")
        if self.findings:
            notes.append(
                f"the migration left {self.findings} finding(s) for a human (`tpu-migrate check`)"
            )
        notes.extend(f"not migrated: {error}" for error in self.errors)
        notes.extend(numerics_notes(code for rules in self.changed.values() for code in rules))
        return notes


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


def migrate_copy(root: Path, script: Path, destination: Path) -> MigratedCopy:
    """Copy ``root`` to ``destination`` and migrate every Python file of the copy."""
    shutil.copytree(root, destination, symlinks=True, ignore=shutil.ignore_patterns(*SKIPPED_DIRS))
    copy = MigratedCopy(root=destination, script=destination / script.relative_to(root))
    found = discover([destination])
    for path, message in found.problems:
        copy.errors.append(f"{_relative(path, destination)}: {message}")
    for result in migrate_files(found.files, Selection.from_options(), jobs=1):
        relative = _relative(result.path, destination)
        if result.error:
            copy.errors.append(f"{relative}:{result.error_line}: {result.error}")
            continue
        copy.findings += len(result.findings)
        if result.changed:
            result.path.write_bytes(result.new_bytes())
            copy.changed[relative] = dict(result.applied)
    return copy


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()
