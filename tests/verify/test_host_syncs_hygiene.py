"""TPU115 measured: the item_logging_tqdm fixture reads the device only at its logging interval once
migrated, while the migration without TPU115 reads it in the middle of every step."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from migrate import cli
from migrate.verify.compare import WARMUP_STEPS
from tests.fixtures.goldens import all_fixtures

pytestmark = [pytest.mark.xla, pytest.mark.usefixtures("xla_available")]

FIXTURE = next(f for f in all_fixtures() if f.name == "item_logging_tqdm")
SCRIPT = FIXTURE.run["script"]
LOG_INTERVAL = 5  # the fixture's --log-interval default
# each logged step reads the loss twice (the progress bar and the print) and the gradient norm once
READS_PER_LOG = 3


def _steps() -> int:
    args = list(FIXTURE.verify_args)
    return int(args[args.index("--steps") + 1])


def _verify(verify_cli, migrated) -> dict:
    outcome = verify_cli(
        str(FIXTURE.before / SCRIPT),
        "--migrated",
        str(migrated),
        "--cwd",
        str(FIXTURE.before),
        *FIXTURE.verify_args,
        "--",
        *FIXTURE.run["args"],
    )
    assert outcome.result is not None, outcome.out + outcome.err
    assert outcome.result["verdict"] == "equivalent", outcome.out + outcome.err
    return outcome.result


def _logged_syncs_in_steady_window(steps: int) -> int:
    """Steady-state intervals run the syncs of steps WARMUP_STEPS+1 .. steps-1 (the run stops at
    the last step's optimizer step, before its sync); step n logs when (n - 1) % interval == 0."""
    first = WARMUP_STEPS + 1
    return sum(1 for n in range(first, steps) if (n - 1) % LOG_INTERVAL == 0)


def test_full_migration_reads_the_device_only_at_the_logging_interval(verify_cli):
    steps = _steps()
    assert steps >= 2 * LOG_INTERVAL + WARMUP_STEPS + 2, "cross two logging intervals"
    result = _verify(verify_cli, FIXTURE.after / SCRIPT)
    hygiene = result["hygiene"]
    steady = steps - WARMUP_STEPS - 1
    assert hygiene["steady_steps"] == steady
    assert hygiene["compilations_after_warmup"] == 0
    assert hygiene["executions_per_step"] == 1.0
    assert hygiene["mid_step_transfers"] == 0
    logged = _logged_syncs_in_steady_window(steps)
    assert logged >= 2
    # every transfer belongs to a logged step: READS_PER_LOG each, nothing in between
    assert hygiene["host_transfers_per_step"] == pytest.approx(READS_PER_LOG * logged / steady)
    assert hygiene["host_transfers_per_step"] <= READS_PER_LOG / LOG_INTERVAL
    assert all(s["rel_diff"] <= 1e-5 for s in result["steps"])


def test_migration_without_tpu115_reads_the_device_in_every_step(verify_cli, tmp_path, capsys):
    naive = tmp_path / "naive"
    shutil.copytree(FIXTURE.before, naive)
    assert cli.main(["apply", "--ignore", "TPU115", str(naive)]) == 0
    capsys.readouterr()
    text = (naive / SCRIPT).read_text()
    assert "add_step_closure" not in text and "loss.item()" in text
    hygiene = _verify(verify_cli, naive / SCRIPT)["hygiene"]
    assert hygiene["mid_step_transfers"] == hygiene["steady_steps"] > 0
    assert hygiene["executions_per_step"] >= 2.0
    assert hygiene["host_transfers_per_step"] >= 1.0


_NUMBER = re.compile(r"-?\d+\.\d+")


def _printed(tree, env_extra: dict) -> list[str]:
    env = {**os.environ, **env_extra}
    proc = subprocess.run(
        [sys.executable, SCRIPT, *FIXTURE.run["args"]],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.splitlines()


def test_migrated_script_prints_the_same_lines():
    """Same lines in the same order; decimals may differ by one unit in the last printed place
    (XLA:CPU and the CPU round fp32 differently; device sums add in fp32)."""
    original = _printed(FIXTURE.before, {"CUDA_VISIBLE_DEVICES": ""})
    migrated = _printed(FIXTURE.after, {"PJRT_DEVICE": "CPU", "CUDA_VISIBLE_DEVICES": ""})
    assert any(line.startswith("epoch 1 step") for line in original)
    assert len(migrated) == len(original), (original, migrated)
    for before, after in zip(original, migrated):
        assert _NUMBER.sub("#", before) == _NUMBER.sub("#", after), (before, after)
        for a, b in zip(_NUMBER.findall(before), _NUMBER.findall(after)):
            places = len(a.split(".")[1])
            assert abs(float(a) - float(b)) <= 1.01 * 10**-places, (before, after)
