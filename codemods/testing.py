"""Run a rule's own cases: used by the test suite and handy when writing a rule.

Each case runs the rule the way ``python -m libcst.tool codemod`` does (the rule alone, imports
fixed by libcst), so the cases also prove the rule works outside the tpu-migrate engine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile

from ._base import FINDINGS_KEY, Invalid, TpuCodemod, Valid

# Long cases live in files beside the rules: cases/<rule module>/, listed in its cases.json.
CASES = Path(__file__).resolve().parent / "cases"


def apply_rule(rule: type[TpuCodemod], source: str) -> tuple[str, list[str]]:
    """Return the rewritten source and the finding codes reported."""
    context = CodemodContext(filename="case.py")
    try:
        module = rule(context).transform_module(cst.parse_module(source))
    except SkipFile:
        return source, []
    findings = context.scratch.get(FINDINGS_KEY, [])
    return module.code, [finding.code for finding in findings]


def case_id(rule: type[TpuCodemod], kind: str, index: int) -> str:
    return f"{rule.CODE}-{kind}-{index}"


def rule_cases(rule: type[TpuCodemod]) -> tuple[list[Valid], list[Invalid]]:
    """A rule's cases, the embedded ones and those in files, each kind in its own order.

    ``cases/<module>/cases.json`` lists each file case with its place among the rule's cases
    (``index``), its files (``source``; ``before`` and ``after``), and its ``findings`` and
    ``why``, so a case keeps its id whether it is embedded or in a file.
    """
    valid, invalid = list(rule.VALID), list(rule.INVALID)
    listing = CASES / sys.modules[rule.__module__].__name__.rpartition(".")[2] / "cases.json"
    if not listing.is_file():
        return valid, invalid
    folder = listing.parent
    spec = json.loads(listing.read_text(encoding="utf-8"))

    def text(name: str) -> str:
        return (folder / name).read_text(encoding="utf-8")

    for entry in sorted(spec.get("valid", []), key=lambda e: e["index"]):
        valid.insert(entry["index"], Valid(text(entry["source"]), entry.get("why", "")))
    for entry in sorted(spec.get("invalid", []), key=lambda e: e["index"]):
        case = Invalid(
            text(entry["before"]),
            text(entry["after"]),
            tuple(entry.get("findings", ())),
            entry.get("why", ""),
        )
        invalid.insert(entry["index"], case)
    return valid, invalid


def case_sources() -> list[tuple[type[TpuCodemod], str, str]]:
    """(rule, case id, source) for every rule's own cases: each VALID source and each INVALID
    case's input, in pipeline order."""
    from . import PIPELINE

    sources = []
    for rule in PIPELINE:
        valid, invalid = rule_cases(rule)
        sources += [(rule, case_id(rule, "valid", i), c.source) for i, c in enumerate(valid)]
        sources += [(rule, case_id(rule, "invalid", i), c.before) for i, c in enumerate(invalid)]
    return sources
