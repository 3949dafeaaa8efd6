"""Renderers: per-file results -> text for people, JSON for machines."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from . import __version__
from .discover import display_path
from .engine import FileResult


@dataclass
class RunSummary:
    scanned: int = 0
    changed: int = 0
    failed: int = 0
    rewrites: Counter = field(default_factory=Counter)
    findings: Counter = field(default_factory=Counter)

    @classmethod
    def of(cls, results: Sequence[FileResult], extra_failures: int = 0) -> "RunSummary":
        summary = cls(scanned=len(results), failed=extra_failures)
        for result in results:
            summary.changed += result.changed
            summary.failed += result.error is not None
            summary.rewrites.update(result.applied)
            summary.findings.update(f.code for f in result.findings)
        return summary

    def to_dict(self) -> dict:
        return {
            "files_scanned": self.scanned,
            "files_changed": self.changed,
            "files_failed": self.failed,
            "rewrites": dict(sorted(self.rewrites.items())),
            "findings": dict(sorted(self.findings.items())),
        }

    def sentence(self, verb: str) -> str:
        parts = [
            f"{self.changed} file{'s' if self.changed != 1 else ''} {verb}",
            f"{self.scanned - self.changed - self.failed} unchanged",
        ]
        if self.findings:
            total = sum(self.findings.values())
            parts.append(f"{total} finding{'s' if total != 1 else ''} for a human")
        if self.failed:
            parts.append(f"{self.failed} could not be processed")
        return ", ".join(parts) + "."


def error_line(result: FileResult) -> str:
    return f"{display_path(result.path)}:{result.error_line}: {result.error}"


def finding_lines(result: FileResult) -> list[str]:
    path = display_path(result.path)
    return [f"{path}:{f.line}:{f.column}: {f.code} {f.message}" for f in result.findings]


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
    lines.append(summary.sentence("would change"))
    return "\n".join(lines) + "\n"


def check_json(results: Sequence[FileResult], summary: RunSummary) -> str:
    files = [
        {
            "path": display_path(result.path),
            "changed": result.changed,
            "applied": sorted(result.applied) if result.changed else [],
            "findings": [f.to_dict() for f in result.findings],
            "error": error_line(result) if result.error else None,
        }
        for result in results
        if not result.skipped or result.error
    ]
    document = {"version": __version__, "files": files, "summary": summary.to_dict()}
    return json.dumps(document, indent=2) + "\n"
