"""Notes verify adds about the migration itself (no XLA run needed)."""

from __future__ import annotations

import shutil
from pathlib import Path

from migrate.engine import Selection, migrate_files
from migrate.verify.project import (
    adjustments_for_given_migration,
    migrate_copy,
    numerics_notes,
    rules_applied_to,
)
from migrate.verify.shadow import Shadow

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


PARTIAL = FIXTURES / "partial_last_batch"


def _training_loader_line(script: Path) -> int:
    lines = script.read_text().splitlines()
    return next(
        i for i, line in enumerate(lines, 1) if line.strip() == "train_loader = DataLoader("
    )


def test_the_original_run_repeats_drop_last_at_the_users_line(tmp_path):
    script = PARTIAL / "before/train.py"
    copy = migrate_copy(PARTIAL / "before", script, Shadow(tmp_path / "shadow"))
    line = _training_loader_line(script)
    assert copy.adjustments == [
        {
            "code": "TPU113",
            "kind": "drop_last",
            "line": line,
            "end_line": line + 6,
            "path": str(script.resolve()),
        }
    ]
    assert any(
        note.startswith("the original run repeats what TPU113 changed")
        and f"train.py:{line}" in note
        for note in copy.notes(PARTIAL / "before")
    )


def test_a_given_migration_without_the_rules_edits_leaves_the_original_alone(tmp_path):
    script = PARTIAL / "before/train.py"
    kept, notes, missing = adjustments_for_given_migration(script, PARTIAL / "after/train.py")
    assert [a["kind"] for a in kept] == ["drop_last"] and missing == []
    naive = tmp_path / "train.py"
    shutil.copy(script, naive)
    selection = Selection.from_options(ignore=["TPU113", "TPU114"])
    for result in migrate_files([naive], selection, jobs=1):
        naive.write_bytes(result.new_bytes())
    kept, notes, missing = adjustments_for_given_migration(script, naive)
    assert kept == [] and missing == ["TPU113"]
    assert notes == [
        "TPU113 would still edit train.py: the migrated script does not have its changes, so the "
        "original run is not adjusted for them"
    ]
