"""``check --format markdown``: a report to paste into a pull request or an issue."""

from __future__ import annotations

from typing import Sequence

from .discover import display_path
from .engine import FileResult
from .report import MIGRATED_DEFINITION, RunSummary, Statistics, applied_text, place


def check_markdown(
    results: Sequence[FileResult], summary: RunSummary, problems: Sequence[str] = ()
) -> str:
    lines = ["# tpu-migrate check", "", *_summary(summary), ""]
    lines += _file_table(results, summary.statistics)
    lines += _listing(
        "Findings for a human",
        [
            f"`{place(r, f.line, f.column)}` **{f.code}** {_inline(f.message)}"
            for r in results
            for f in r.findings
        ],
    )
    lines += _listing(
        "Unused suppressions",
        [
            f"`{place(r, u.line, u.column)}` {_inline(u.message)}"
            for r in results
            for u in r.unused_suppressions
        ],
    )
    errors = [f"`{place(r, r.error_line)}` {_inline(r.error)}" for r in results if r.error]
    lines += _listing("Files that could not be processed", [*errors, *map(_inline, problems)])
    return "\n".join(lines).rstrip("\n") + "\n"


def _summary(summary: RunSummary) -> list[str]:
    statistics = summary.statistics
    return [
        f"{summary.sentence('would change')}",
        "",
        f"**Migrated: {statistics.percent_text()}** of {statistics.constructs} torch "
        f"construct{'s' if statistics.constructs != 1 else ''}: {statistics.rewritten} "
        f"rewritten by `tpu-migrate apply`, {statistics.left} left for a human "
        f"({MIGRATED_DEFINITION}).",
    ]


def _file_table(results: Sequence[FileResult], total: Statistics) -> list[str]:
    rows = []
    for result in results:
        if result.error or result.skipped:
            continue
        stats = Statistics.of(result)
        if stats.constructs:
            rows.append(_row(f"`{_cell(display_path(result.path))}`", stats))
    if not rows:
        return []
    return [
        "## Files",
        "",
        "| file | rewrites | findings left | migrated |",
        "|---|---|---|---|",
        *rows,
        _row("**total**", total),
        "",
    ]


def _row(name: str, stats: Statistics) -> str:
    rewrites = _cell(applied_text(stats.rewrites)) or "-"
    findings = _cell(applied_text(stats.findings)) or "-"
    return f"| {name} | {rewrites} | {findings} | {stats.percent_text()} |"


def _listing(title: str, items: list[str]) -> list[str]:
    if not items:
        return []
    return [f"## {title}", "", *(f"- {item}" for item in items), ""]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _inline(text: str) -> str:
    return " ".join(text.split())
