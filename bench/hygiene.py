"""TPU hygiene of the hygiene fixtures: the naive migration (hygiene rules off) vs the full one.

For each fixture below, migrate a copy of its before/ twice with `tpu-migrate apply` (once with
the hygiene rules ignored, once with every rule), verify each copy against the original with
`tpu-migrate verify --migrated ... --json -` (real torch_xla on the CPU) and print what
torch_xla's metrics say about the migrated run.

    PYTHONPATH=. python bench/hygiene.py [FIXTURE...]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import codemods  # noqa: E402

FIXTURES = ROOT / "fixtures"
# The rules whose job is TPU hygiene: the naive migration runs every rule but these.
HYGIENE_RULES = ("TPU113", "TPU114", "TPU115", "TPU116")
# Fixture directories measured, one per line (a missing one is skipped with a note).
HYGIENE_FIXTURES = (
    "partial_last_batch",  # TPU113: drop_last on the training loader
    "variable_length_text",  # TPU114: pad_sequence batches padded to length buckets
    "item_logging_tqdm",  # TPU115: per-step .item() logging and a tqdm bar
)
COLUMNS = (
    ("fixture", 22),
    ("variant", 7),
    ("compilations", 12),
    ("after warm-up", 13),
    ("host transfers/step", 19),
    ("mid-step transfers", 18),
    ("verdict", 10),
)


def main(names: list[str]) -> int:
    known = codemods.all_codes()
    ignored = [code for code in HYGIENE_RULES if code in known]
    notes = [
        f"{code} is not a rule yet: nothing to ignore"
        for code in HYGIENE_RULES
        if code not in known
    ]
    rows = []
    for name in names or HYGIENE_FIXTURES:
        fixture = FIXTURES / name
        if not (fixture / "fixture.json").is_file():
            notes.append(f"{name}: no fixtures/{name}/fixture.json, skipped")
            continue
        for variant, ignore in (("naive", ignored), ("full", [])):
            rows.append((name, variant, measure(fixture, ignore)))
    print_table(rows)
    for note in notes:
        print(f"note: {note}")
    return 0


def measure(fixture: Path, ignore: list[str]) -> dict:
    """Migrate a copy of ``fixture``'s before/ (ignoring ``ignore``) and verify it."""
    spec = json.loads((fixture / "fixture.json").read_text())
    run = spec["run"]
    with tempfile.TemporaryDirectory(prefix="tpu-migrate-hygiene-") as temp:
        copy = Path(temp) / "migrated"
        shutil.copytree(fixture / "before", copy)
        apply = ["apply", "--jobs", "1", str(copy)]
        if ignore:
            apply[1:1] = ["--ignore", ",".join(ignore)]
        tpu_migrate(apply)
        before = fixture / "before"
        result = tpu_migrate(
            [
                "verify",
                str(before / run["script"]),
                "--migrated",
                str(copy / run["script"]),
                "--cwd",
                str(before),
                "--json",
                "-",
                *spec.get("verify_args", []),
                "--",
                *run.get("args", []),
            ]
        )
    return json.loads(result.stdout)


def tpu_migrate(args: list[str]) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


def print_table(rows: list[tuple[str, str, dict]]) -> None:
    print("  ".join(title.ljust(width) for title, width in COLUMNS))
    print("  ".join("-" * width for _, width in COLUMNS))
    for name, variant, result in rows:
        hygiene = result.get("hygiene") or {}
        cells = (
            name,
            variant,
            hygiene.get("compilations", "-"),
            hygiene.get("compilations_after_warmup", "-"),
            _per_step(hygiene.get("host_transfers_per_step")),
            hygiene.get("mid_step_transfers", "-"),
            result.get("verdict", "-"),
        )
        print("  ".join(str(cell).ljust(width) for cell, (_, width) in zip(cells, COLUMNS)))


def _per_step(value) -> str:
    return "-" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
