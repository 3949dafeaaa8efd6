"""TPU107 was one rule; its parts run where it ran, in an order that gives what the one rule
gave (codemods/__init__.py says why). Each part's cases take what the parts before it leave:
composed in pipeline order, they still make the old rule's multi-part cases."""

from __future__ import annotations

import libcst as cst
import pytest

import codemods
from codemods.testing import CASES
from migrate.engine import Selection, run_pipeline


def _case(folder: str, name: str) -> str:
    return (CASES / folder / name).read_text(encoding="utf-8")


def _migrated(source: str, select: str) -> str:
    module = cst.parse_module(source)
    return run_pipeline(module, source, Selection.from_options([select]), "case.py")[0]


def test_the_parts_run_where_the_old_rules_ran():
    codes = [rule.CODE for rule in codemods.PIPELINE]
    assert codes.index("TPU137") == codes.index("TPU107") + 1  # autocast rewritten first


@pytest.mark.parametrize("index", ["00", "01"])
def test_tpu107_parts_together_make_the_old_cases(index):
    old = {"00": "07", "01": "08"}[index]
    source = _case("tpu107_mixed_precision", f"invalid_{old}.py")
    expected = _case("tpu137_grad_scaler", f"invalid_{index}.expected.py")
    assert _migrated(source, "TPU107") == expected
