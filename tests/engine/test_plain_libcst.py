"""The fast layer changes nothing: every rule case, fixture and torch-source sample file migrated
with it and with ``TPU_MIGRATE_PLAIN_LIBCST=1`` (stock libcst throughout: its visit, metadata
wrapper, code generation and import visitors, and no pre-filter but the trigger words) gives the
same output, rewrite counts, findings, regions, verify adjustments and errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import libcst as cst
import pytest

from codemods.testing import case_sources, rule_cases
from migrate.engine import PipelineDetails, Selection, migrate_files, run_pipeline
from migrate.fastcst import PLAIN_LIBCST_VARIABLE, plain_libcst
from tests.fixtures.goldens import all_fixtures
from tests.sweep.test_real_code_sweep import _torch_sample, copy_sample

import codemods

pytestmark = pytest.mark.slow  # every case, fixture and torch sample file, twice


def _case_texts() -> list[tuple[str, type, str]]:
    texts = [(case, rule, source) for rule, case, source in case_sources()]
    for rule in codemods.PIPELINE:
        _, invalid = rule_cases(rule)
        texts += [(f"{rule.CODE}-after-{i}", rule, c.after) for i, c in enumerate(invalid)]
    return texts


CASE_TEXTS = _case_texts()


def _both_ways(monkeypatch, run):
    monkeypatch.delenv(PLAIN_LIBCST_VARIABLE, raising=False)
    assert not plain_libcst()
    fast = run()
    monkeypatch.setenv(PLAIN_LIBCST_VARIABLE, "1")
    assert plain_libcst()
    plain = run()
    monkeypatch.delenv(PLAIN_LIBCST_VARIABLE)
    return fast, plain


def _pipeline_outcome(text: str, selection: Selection) -> tuple:
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        return ("does not parse", exc.raw_line)
    details = PipelineDetails()
    new_text, applied, findings = run_pipeline(module, text, selection, "case.py", details)
    return (
        new_text,
        applied,
        [dataclasses.astuple(f) for f in findings],
        sorted(details.used_suppressions),
        [dataclasses.astuple(a) for a in details.adjustments],
        details.rewrite_regions,
    )


@pytest.mark.parametrize("case, rule, text", CASE_TEXTS, ids=[c for c, _, _ in CASE_TEXTS])
def test_rule_case_is_the_same_both_ways(monkeypatch, case, rule, text):
    """Each case text through its own rule, and through the whole pipeline."""
    for selection in (Selection.from_options(select=[rule.CODE]), Selection.from_options()):
        fast, plain = _both_ways(monkeypatch, lambda: _pipeline_outcome(text, selection))
        assert fast == plain, f"{case} with {selection.rule_codes}"


def _file_outcomes(paths: list[Path], jobs: int) -> dict[str, tuple]:
    outcomes = {}
    for result in migrate_files(paths, Selection.from_options(), jobs=jobs):
        # With the pre-filter off, plain libcst runs rules on files it skips: ``skipped`` is
        # left out, and an unchanged text is as good as none.
        outcomes[str(result.path)] = (
            result.new_text if result.changed else None,
            result.applied,
            [dataclasses.astuple(f) for f in result.findings],
            [dataclasses.astuple(a) for a in result.adjustments],
            result.error,
            result.error_line if result.error else None,
            result.rewrite_regions,
            [dataclasses.astuple(u) for u in result.unused_suppressions],
        )
    return outcomes


FIXTURES = all_fixtures()


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.name for f in FIXTURES])
def test_fixture_is_the_same_both_ways(monkeypatch, tmp_path, fixture):
    files = [fixture.before / p for p in fixture.python_files(fixture.before)]
    copies = copy_sample(fixture.before, files, tmp_path)
    fast, plain = _both_ways(monkeypatch, lambda: _file_outcomes(copies, jobs=1))
    assert fast == plain
    assert any(outcome[0] is not None for outcome in fast.values()) or fixture.name == "no_torch"


def test_torch_source_sample_is_the_same_both_ways(monkeypatch, tmp_path):
    tree, sample = _torch_sample()
    copies = copy_sample(tree, sample, tmp_path)
    fast, plain = _both_ways(monkeypatch, lambda: _file_outcomes(copies, jobs=2))
    differing = sorted(path for path in fast if fast[path] != plain[path])
    assert not differing, f"{len(differing)} of {len(fast)} files differ: {differing[:5]}"
    assert sum(outcome[0] is not None for outcome in fast.values()) > 0
