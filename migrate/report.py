"""Renderers: per-file results -> text for people, JSON for machines (also SARIF and markdown,
in their own modules), and the migration statistics all of them show.

Statistics, like HIPIFY's: a *construct* is one place in the code that needs something for a TPU.
Each rewrite a rule applies is one construct migrated (a ``.cuda()`` call, an ``optimizer.step()``,
a device string...); each finding left for a human is one construct not migrated. So

    migrated % = rewrites / (rewrites + findings)

over the files that could be processed; a suppressed rewrite or finding counts in neither, and a
file that could not be processed in neither (it is reported as failed). With no construct at all
the percentage is undefined (None in JSON, "n/a" in text).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from . import __version__
from .discover import display_path
from .engine import FileResult

MIGRATED_DEFINITION = "migrated % = rewrites / (rewrites + findings left for a human)"


@dataclass
class Statistics:
    """Rewrites applied and findings left, by code, and the migrated percentage."""

    rewrites: Counter = field(default_factory=Counter)
    findings: Counter = field(default_factory=Counter)

    @classmethod
    def of(cls, result: FileResult) -> "Statistics":
        return cls(Counter(result.applied), Counter(f.code for f in result.findings))

    @property
    def rewritten(self) -> int:
        return sum(self.rewrites.values())

    @property
    def left(self) -> int:
        return sum(self.findings.values())

    @property
    def constructs(self) -> int:
        return self.rewritten + self.left

    @property
    def migrated_percent(self) -> float | None:
        if not self.constructs:
            return None
        return round(100 * self.rewritten / self.constructs, 1)

    def percent_text(self) -> str:
        percent = self.migrated_percent
        return "n/a" if percent is None else f"{percent:g}%"

    def to_dict(self) -> dict:
        return {
            "rewrites": dict(sorted(self.rewrites.items())),
            "findings": dict(sorted(self.findings.items())),
            "constructs": self.constructs,
            "migrated_percent": self.migrated_percent,
        }


@dataclass
class RunSummary:
    scanned: int = 0
    changed: int = 0
    failed: int = 0
    rewrites: Counter = field(default_factory=Counter)
    findings: Counter = field(default_factory=Counter)
    unused_suppressions: int = 0

    @classmethod
    def of(cls, results: Sequence[FileResult], extra_failures: int = 0) -> "RunSummary":
        summary = cls(scanned=len(results), failed=extra_failures)
        for result in results:
            summary.changed += result.changed
            summary.failed += result.error is not None
            summary.rewrites.update(result.applied)
            summary.findings.update(f.code for f in result.findings)
            summary.unused_suppressions += len(result.unused_suppressions)
        return summary

    @property
    def statistics(self) -> Statistics:
        return Statistics(self.rewrites, self.findings)

    def to_dict(self) -> dict:
        statistics = self.statistics
        return {
            "files_scanned": self.scanned,
            "files_changed": self.changed,
            "files_failed": self.failed,
            "rewrites": dict(sorted(self.rewrites.items())),
            "findings": dict(sorted(self.findings.items())),
            "constructs": statistics.constructs,
            "migrated_percent": statistics.migrated_percent,
            "migrated_definition": MIGRATED_DEFINITION,
            "unused_suppressions": self.unused_suppressions,
        }

    def sentence(self, verb: str) -> str:
        parts = [
            f"{self.changed} file{'s' if self.changed != 1 else ''} {verb}",
            f"{self.scanned - self.changed - self.failed} unchanged",
        ]
        if self.findings:
            total = sum(self.findings.values())
            parts.append(f"{total} finding{'s' if total != 1 else ''} for a human")
        if self.unused_suppressions:
            count = self.unused_suppressions
            parts.append(f"{count} unused suppression{'s' if count != 1 else ''}")
        if self.failed:
            parts.append(f"{self.failed} could not be processed")
        return ", ".join(parts) + "."


def place(result: FileResult, line: int, column: int | None = None) -> str:
    """``path:line:column``, or ``nb.ipynb:cell 3:line 5`` in a notebook."""
    path = display_path(result.path)
    if line == 0:
        return path  # a problem of the whole file
    cell = result.cell_of(line)
    if cell is not None:
        return f"{path}:cell {cell[0]}:line {cell[1]}"
    return f"{path}:{line}" if column is None else f"{path}:{line}:{column}"


def error_line(result: FileResult) -> str:
    return f"{place(result, result.error_line)}: {result.error}"


def finding_lines(result: FileResult) -> list[str]:
    return [f"{place(result, f.line, f.column)}: {f.code} {f.message}" for f in result.findings]


def unused_suppression_lines(result: FileResult) -> list[str]:
    return [f"{place(result, u.line, u.column)}: {u.message}" for u in result.unused_suppressions]


def located(result: FileResult, item: dict) -> dict:
    """A finding's JSON with, in a notebook, the cell and the line within it."""
    cell = result.cell_of(item["line"])
    return item if cell is None else {**item, "cell": cell[0], "cell_line": cell[1]}


def statistics_lines(results: Sequence[FileResult], summary: RunSummary) -> list[str]:
    """A small table: per file with something to migrate, then the total."""
    rows = [(display_path(r.path), Statistics.of(r)) for r in results if not r.error]
    rows = [row for row in rows if row[1].constructs]
    if not rows:
        return []
    rows.append(("total", summary.statistics))
    width = max(len(name) for name, _ in rows)
    lines = [f"Statistics ({MIGRATED_DEFINITION}):"]
    for name, stats in rows:
        lines.append(
            f"  {name:<{width}}  {stats.rewritten:>4} rewritten  {stats.left:>4} left"
            f"  {stats.percent_text():>6} migrated"
        )
    return lines


def applied_text(applied: dict[str, int]) -> str:
    return ", ".join(f"{code} x{count}" for code, count in sorted(applied.items()))


def check_text(results: Sequence[FileResult], summary: RunSummary) -> str:
    lines: list[str] = []
    for result in results:
        if result.error:
            lines.append(error_line(result))
            continue
        if result.changed:
            lines.append(f"{display_path(result.path)}: would apply {applied_text(result.applied)}")
        lines.extend(finding_lines(result))
        lines.extend(unused_suppression_lines(result))
    lines.extend(statistics_lines(results, summary))
    lines.append(summary.sentence("would change"))
    return "\n".join(lines) + "\n"


def check_json(results: Sequence[FileResult], summary: RunSummary) -> str:
    files = [
        {
            "path": display_path(result.path),
            "changed": result.changed,
            "applied": sorted(result.applied) if result.changed else [],
            "findings": [located(result, f.to_dict()) for f in result.findings],
            "error": error_line(result) if result.error else None,
            "statistics": Statistics.of(result).to_dict(),
            "unused_suppressions": [
                located(result, u.to_dict()) for u in result.unused_suppressions
            ],
        }
        for result in results
        if not result.skipped or result.error
    ]
    document = {"version": __version__, "files": files, "summary": summary.to_dict()}
    return json.dumps(document, indent=2) + "\n"
