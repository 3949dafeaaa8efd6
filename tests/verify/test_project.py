"""Notes verify adds about the migration itself (no XLA run needed)."""

from __future__ import annotations

from pathlib import Path

from migrate.verify.project import numerics_notes, rules_applied_to

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_rules_that_change_numerics_on_purpose_are_announced():
    applied = rules_applied_to(FIXTURES / "recommender_sparse/before/train.py")
    assert "TPU111" in applied
    notes = numerics_notes(applied)
    assert [note.split()[0] for note in notes] == ["TPU111", "TPU113"]
    assert notes[0].startswith("TPU111 changes numerics on purpose: SparseAdam")
    assert "drop their last partial batch" in notes[1]


def test_plain_device_rules_add_no_numerics_note():
    applied = rules_applied_to(FIXTURES / "dict_batches/before/train.py")
    assert applied and numerics_notes(applied) == []
