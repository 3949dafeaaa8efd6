"""Run a rule's own cases: used by the test suite and handy when writing a rule.

Each case runs the rule the way ``python -m libcst.tool codemod`` does (the rule alone, imports
fixed by libcst), so the cases also prove the rule works outside the tpu-migrate engine.
"""

from __future__ import annotations

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile

from ._base import FINDINGS_KEY, TpuCodemod


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


def case_sources() -> list[tuple[type[TpuCodemod], str, str]]:
    """(rule, case id, source) for every rule's own cases: each VALID source and each INVALID
    case's input, in pipeline order."""
    from . import PIPELINE

    return [
        (rule, case_id(rule, kind, i), source)
        for rule in PIPELINE
        for kind, sources in (
            ("valid", [case.source for case in rule.VALID]),
            ("invalid", [case.before for case in rule.INVALID]),
        )
        for i, source in enumerate(sources)
    ]
