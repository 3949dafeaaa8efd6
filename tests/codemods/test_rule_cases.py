"""Every registered rule's embedded cases, collected automatically (Fixit's VALID/INVALID model)."""

from __future__ import annotations

import re

import pytest

import codemods
from migrate.fastcst.facts import FileFacts
from codemods.testing import apply_rule, case_id, rule_cases

CASES = {rule: rule_cases(rule) for rule in codemods.PIPELINE}
VALID_CASES = [
    pytest.param(rule, case, id=case_id(rule, "valid", i))
    for rule, (valid, _) in CASES.items()
    for i, case in enumerate(valid)
]
INVALID_CASES = [
    pytest.param(rule, case, id=case_id(rule, "invalid", i))
    for rule, (_, invalid) in CASES.items()
    for i, case in enumerate(invalid)
]


@pytest.mark.parametrize("rule, case", VALID_CASES)
def test_valid_case_is_untouched(rule, case):
    output, findings = apply_rule(rule, case.source)
    assert output == case.source
    assert findings == []


@pytest.mark.parametrize("rule, case", INVALID_CASES)
def test_invalid_case_is_rewritten(rule, case):
    output, findings = apply_rule(rule, case.before)
    assert output == case.after
    assert sorted(findings) == sorted(case.findings)
    compile(output, "after.py", "exec")


@pytest.mark.parametrize("rule, case", INVALID_CASES)
def test_invalid_case_contains_a_trigger_of_its_rule(rule, case):
    """The engine skips a rule on a file without any of its TRIGGERS: they must not hide a case."""
    assert rule.is_triggered_by(case.before), f"{rule.CODE} TRIGGERS {rule.TRIGGERS} miss this case"


@pytest.mark.parametrize("rule, case", INVALID_CASES)
def test_rule_may_act_wherever_it_acts(rule, case):
    """The engine does not run a rule whose ``may_act`` says no: on the case and on its output
    (where findings are reported again), wherever the rule changes or reports something,
    ``may_act`` must say yes."""
    for text in (case.before, case.after):
        output, findings = apply_rule(rule, text)
        if output != text or findings:
            assert rule.may_act(FileFacts.of(text)), f"{rule.CODE}.may_act misses:\n{text}"


@pytest.mark.parametrize("rule", codemods.PIPELINE, ids=lambda r: r.CODE)
def test_rule_may_act_on_code_python_cannot_parse(rule):
    """Facts of a file Python's parser rejects rule nothing out: the engine then parses it with
    libcst, or, with no rule left, reports no syntax error (it counts on this)."""
    broken = FileFacts.of("import torch\nx[x < 0] = torch.cuda(\n")
    assert not broken.parsed
    assert rule.may_act(broken)


@pytest.mark.parametrize("rule", codemods.PIPELINE, ids=lambda r: r.CODE)
def test_rule_is_documented(rule):
    assert re.fullmatch(r"TPU1\d\d", rule.CODE)
    assert all(re.fullmatch(r"TPU2\d\d", code) for code in rule.FINDINGS)
    assert re.fullmatch(r"[a-z0-9-]+", rule.NAME)
    doc = rule.documentation()
    for section in ("What it does", "Why", "Example"):
        assert section in doc, f"{rule.CODE} docstring lacks {section!r}"
    assert rule.SUMMARY and len(rule.SUMMARY) <= 100
    valid, invalid = CASES[rule]
    assert invalid, f"{rule.CODE} has no before/after case"
    assert valid, f"{rule.CODE} has no must-stay-untouched case"


def test_codes_are_unique():
    codes = [rule.CODE for rule in codemods.PIPELINE]
    codes += [code for rule in codemods.PIPELINE for code in rule.FINDINGS]
    assert len(codes) == len(set(codes))


@pytest.mark.parametrize("rule, case", INVALID_CASES)
def test_invalid_case_is_idempotent(rule, case):
    """A second run on the rule's own output changes nothing: ``apply`` can run again on a
    migrated tree, and a marker is never added twice."""
    output, _ = apply_rule(rule, case.after)
    assert output == case.after
