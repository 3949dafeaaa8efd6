"""``check --format sarif``: SARIF 2.1.0, the format GitHub code scanning and IDEs read.

One run. ``tool.driver.rules`` describes every rule (level ``note``: a rewrite ``apply`` would
make) and every finding code (level ``warning``: left for a human), with the help text of
``tpu-migrate explain``. Results: each finding, each place a rule would rewrite (so code scanning
shows what ``apply`` would change) and each unused suppression. Locations are relative to the
scanned root (``%SRCROOT%``). Files that could not be processed are tool execution notifications.
The statistics (per file and in total) are in the run's and the artifacts' ``properties``.
"""

from __future__ import annotations

import json
import textwrap
from importlib import metadata
from pathlib import Path
from typing import Sequence
from urllib.parse import quote

import codemods

from . import __version__
from .engine import FileResult
from .report import MIGRATED_DEFINITION, RunSummary, Statistics
from .suppressions import UNUSED_SUPPRESSION

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
FINDING_LEVEL, REWRITE_LEVEL = "warning", "note"


def check_sarif(
    results: Sequence[FileResult],
    summary: RunSummary,
    problems: Sequence[str] = (),
    root: Path | None = None,
) -> str:
    root = (root or Path.cwd()).absolute()
    rules = rule_descriptors()
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    sarif_results: list[dict] = []
    artifacts: list[dict] = []
    notifications: list[dict] = []
    for result in results:
        location = _artifact_location(result.path, root)
        if result.error:
            notifications += _in_cells(result, [_error_notification(result, location)])
            continue
        if result.skipped:
            continue
        sarif_results += _in_cells(result, _file_results(result, location, index))
        artifacts.append(
            {
                "location": location,
                "properties": {"statistics": Statistics.of(result).to_dict()},
            }
        )
    notifications += [{"level": "error", "message": {"text": problem}} for problem in problems]
    driver = {
        "name": "tpu-migrate",
        "version": __version__,
        "semanticVersion": __version__,
        "rules": rules,
    }
    home = _home_page()
    if home:
        driver["informationUri"] = home
    statistics = summary.statistics.to_dict()
    run = {
        "tool": {"driver": driver},
        "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri() + "/"}},
        "artifacts": artifacts,
        "results": sarif_results,
        "invocations": [
            {
                "executionSuccessful": summary.failed == 0,
                "toolExecutionNotifications": notifications,
            }
        ],
        "columnKind": "unicodeCodePoints",
        "properties": {
            "statistics": {**statistics, "definition": MIGRATED_DEFINITION},
            "summary": summary.to_dict(),
        },
    }
    document = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(document, indent=2) + "\n"


def rule_descriptors() -> list[dict]:
    """Every rule, every finding code and the unused-suppression report, sorted by id."""
    descriptors = []
    for rule in codemods.PIPELINE:
        descriptors.append(_rule_descriptor(rule))
        for code in rule.FINDINGS:
            descriptors.append(_finding_descriptor(rule, code))
    descriptors.append(
        {
            "id": UNUSED_SUPPRESSION,
            "name": "unused-suppression",
            "shortDescription": {"text": "A `# tpu-migrate: ignore[...]` that hides nothing"},
            "fullDescription": {
                "text": "A suppression comment whose code matched no rewrite and no finding on "
                "its statement: the code it hid has gone, or the comment names the wrong code."
            },
            "help": {"text": "Delete the comment, or correct the code it names."},
            "defaultConfiguration": {"level": FINDING_LEVEL},
        }
    )
    return sorted(descriptors, key=lambda descriptor: descriptor["id"])


def _rule_descriptor(rule) -> dict:
    documentation = rule.documentation()
    return {
        "id": rule.CODE,
        "name": rule.NAME,
        "shortDescription": {"text": rule.SUMMARY},
        "fullDescription": {"text": _section(documentation, "What it does") or rule.SUMMARY},
        "help": {"text": f"{rule.CODE} {rule.NAME} ({rule.SAFETY.value})\n\n{documentation}"},
        "defaultConfiguration": {"level": REWRITE_LEVEL},
        "properties": {"safety": rule.SAFETY.value, "kind": "rewrite", "tags": ["tpu-migrate"]},
    }


def _finding_descriptor(rule, code: str) -> dict:
    doc = rule.finding_doc(code)
    return {
        "id": code,
        "name": f"{rule.NAME}-{code.lower()}",
        "shortDescription": {"text": doc.summary},
        "fullDescription": {"text": doc.why or doc.summary},
        "help": {"text": doc.full_text()},
        "defaultConfiguration": {"level": FINDING_LEVEL},
        "properties": {"reportedBy": rule.CODE, "kind": "finding", "tags": ["tpu-migrate"]},
    }


def _section(documentation: str, title: str) -> str:
    """The indented text under ``title`` in a rule docstring (What it does / Why / Example)."""
    lines = documentation.splitlines()
    if title not in lines:
        return ""
    body = []
    for line in lines[lines.index(title) + 1 :]:
        if line and not line[0].isspace():
            break
        body.append(line)
    return textwrap.dedent("\n".join(body)).strip()


def _file_results(result: FileResult, location: dict, index: dict[str, int]) -> list[dict]:
    out = []
    for finding in result.findings:
        out.append(
            _result(
                finding.code,
                FINDING_LEVEL,
                finding.message,
                location,
                finding.line,
                finding.column,
                index,
            )
        )
    for code, regions in sorted(result.rewrite_regions.items()):
        rule = codemods.rule_by_code(code)
        message = f"`tpu-migrate apply` would rewrite this ({code} {rule.NAME}): {rule.SUMMARY}"
        for first, last in regions:
            rewrite = _result(code, REWRITE_LEVEL, message, location, first, 1, index)
            rewrite["locations"][0]["physicalLocation"]["region"]["endLine"] = max(first, last)
            out.append(rewrite)
    for unused in result.unused_suppressions:
        out.append(
            _result(
                UNUSED_SUPPRESSION,
                FINDING_LEVEL,
                unused.message,
                location,
                unused.line,
                unused.column,
                index,
            )
        )
    return out


def _result(
    rule_id: str, level: str, message: str, location: dict, line: int, column: int, index
) -> dict:
    return {
        "ruleId": rule_id,
        "ruleIndex": index[rule_id],
        "level": level,
        "message": {"text": message},
        "locations": [_physical_location(location, line, column)],
    }


def _in_cells(result: FileResult, results: list[dict]) -> list[dict]:
    """In a notebook, regions count lines within a cell, and the cell (from 1) is a property of
    the location: SARIF has no notion of cells."""
    for item in results:
        physical = item["locations"][0]["physicalLocation"]
        region = physical["region"]
        cell = result.cell_of(region["startLine"])
        if cell is None:
            return results
        if "endLine" in region:
            region["endLine"] = max(result.cell_of(region["endLine"])[1], cell[1])
        region["startLine"] = cell[1]
        physical["properties"] = {"cell": cell[0], "lineInCell": cell[1]}
    return results


def _physical_location(location: dict, line: int, column: int = 1) -> dict:
    region = {"startLine": max(1, line), "startColumn": max(1, column)}
    return {"physicalLocation": {"artifactLocation": location, "region": region}}


def _error_notification(result: FileResult, location: dict) -> dict:
    return {
        "level": "error",
        "message": {"text": result.error},
        "locations": [_physical_location(location, result.error_line)],
    }


def _artifact_location(path: Path, root: Path) -> dict:
    absolute = path.absolute()
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        return {"uri": absolute.as_uri()}
    return {"uri": quote(relative.as_posix()), "uriBaseId": SRCROOT}


def _home_page() -> str | None:
    """The project's home page from the installed package's metadata (``[project.urls]``)."""
    try:
        urls = metadata.metadata("tpu-migrate").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return None
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("homepage", "home", "source", "repository"):
            return url.strip()
    return None
