"""Training steps written by hand (backward(), then the parameters updated in place, no torch.optim).

Single instrumented processes check what the trace records against what the script itself logged
(--dump); `tpu-migrate verify` end to end checks that both sides count the same steps.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.verify.runner import (
    MIGRATED,
    ORIGINAL,
    SideSpec,
    command,
    protocol,
    read_traces,
    side_env,
)
from tests.verify.helpers import script

pytestmark = [pytest.mark.xla, pytest.mark.usefixtures("xla_available")]

STYLES = ["data", "alpha", "no_grad", "assign"]


def _run_side(tmp_path: Path, side: str, name: str, *args: str, steps: int = 5):
    """Runs one script in an instrumented process: (its trace, its saved parameters by name)."""
    import torch

    trace_dir = tmp_path / f"traces-{side}"
    trace_dir.mkdir()
    config = protocol.Config(side=side, trace_dir=str(trace_dir), steps=steps, seed=0)
    spec = SideSpec(side, Path(script(name)), list(args), tmp_path, sys.executable, config)
    proc = subprocess.run(
        command(spec), cwd=tmp_path, env=side_env(spec), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    (trace,) = read_traces(str(trace_dir), side)
    assert trace["error"] is None, trace["error"]
    params = torch.load(trace_dir / trace["params_file"], weights_only=True)
    return trace, params


def _assert_params_are(params: dict, prefix: str, expected: list) -> None:
    import torch

    assert list(params) == [f"{prefix}{j}" for j in range(len(expected))]
    for saved, logged in zip(params.values(), expected):
        assert torch.equal(saved, torch.tensor(logged)), (saved, logged)


@pytest.mark.parametrize("style", STYLES)
def test_manual_sgd_port_is_equivalent(verify_cli, style):
    outcome = verify_cli(
        script("manual_sgd_cpu.py"),
        "--migrated",
        script("manual_sgd_xla.py"),
        "--",
        "--style",
        style,
    )
    assert outcome.code == 0, outcome.out + outcome.err
    result = outcome.result
    assert result["verdict"] == "equivalent"
    assert [s["step"] for s in result["steps"]] == [1, 2, 3, 4, 5]
    for step in result["steps"]:
        assert step["original_loss"] is not None and step["rel_diff"] <= 1e-5
    assert result["params"]["count"] == 6 and result["params"]["max_rel_diff"] <= 1e-5
    assert not result["params"]["missing"]
    # Watching the updates costs the migrated loop nothing: one graph per step, no transfer.
    hygiene = result["hygiene"]
    assert hygiene["executions_per_step"] == 1.0 and hygiene["host_transfers_per_step"] == 0
    assert hygiene["compilations_after_warmup"] == 0


def test_manual_sgd_port_with_another_lr_is_different(verify_cli):
    outcome = verify_cli(
        script("manual_sgd_cpu.py"), "--migrated", script("manual_broken_lr_xla.py")
    )
    assert outcome.code == 1, outcome.out + outcome.err
    assert outcome.result["verdict"] == "different"
    assert outcome.result["first_diverging_step"] == 2  # step 1's loss comes before any update


def test_gradient_accumulation_port_is_equivalent(verify_cli):
    outcome = verify_cli(
        script("manual_sgd_cpu.py"),
        "--migrated",
        script("manual_sgd_xla.py"),
        "--",
        "--accumulate",
        "2",
    )
    assert outcome.code == 0, outcome.out + outcome.err
    assert outcome.result["verdict"] == "equivalent"
    assert [s["step"] for s in outcome.result["steps"]] == [1, 2, 3, 4, 5]


def test_a_script_that_never_updates_its_parameters_has_no_step(verify_cli):
    outcome = verify_cli(
        script("manual_sgd_cpu.py"),
        "--migrated",
        script("manual_sgd_xla.py"),
        "--",
        "--style",
        "none",
    )
    assert outcome.code == 2, outcome.out + outcome.err
    failure = outcome.result["failure"]
    assert failure["side"] == "original"
    assert "neither an optimizer step" in failure["message"]
    assert "in-place update of the parameters after backward()" in failure["message"]


@pytest.mark.parametrize("style", STYLES)
def test_the_run_stops_after_the_update_of_the_last_step(tmp_path, style):
    dump = tmp_path / "dump.json"
    trace, params = _run_side(
        tmp_path, ORIGINAL, "manual_sgd_cpu.py", "--style", style, "--dump", str(dump)
    )
    logged = json.loads(dump.read_text())
    # stopped when the 6th forward began: after the 5th update, before the model is used again
    assert len(logged["updates"]) == 5 and logged["forwards"] == 5
    assert trace["status"] == "stopped" and trace["step_kind"] == "manual"
    assert [s["loss"] for s in trace["steps"]] == [entry["loss"] for entry in logged["updates"]]
    _assert_params_are(params, "manual.param", logged["updates"][-1]["params"])


def test_gradient_accumulation_counts_one_step_per_update(tmp_path):
    """Two backward() per update; the last update is counted when the script ends."""
    dump = tmp_path / "dump.json"
    trace, params = _run_side(
        tmp_path,
        ORIGINAL,
        "manual_sgd_cpu.py",
        "--accumulate",
        "2",
        "--updates",
        "3",
        "--dump",
        str(dump),
    )
    logged = json.loads(dump.read_text())["updates"]
    assert trace["status"] == "finished" and trace["step_kind"] == "manual"
    # each step's loss is the one of the backward() just before its update
    assert [s["loss"] for s in trace["steps"]] == [entry["loss"] for entry in logged]
    assert len(trace["steps"]) == 3
    _assert_params_are(params, "manual.param", logged[-1]["params"])


def test_the_xla_port_records_manual_steps_on_the_device(tmp_path):
    trace, params = _run_side(tmp_path, MIGRATED, "manual_sgd_xla.py")
    assert trace["status"] == "stopped" and trace["step_kind"] == "manual"
    assert len(trace["steps"]) == 5 and all(s["loss"] is not None for s in trace["steps"])
    assert trace["param_devices"] == ["xla"]
    assert list(params) == [f"manual.param{j}" for j in range(6)]
    assert len(trace["hygiene"]["per_step"]) == 5


def test_an_optimizer_run_counts_only_its_optimizer_steps(tmp_path):
    """In-place changes after optimizer.step() (weight clipping) are not manual steps as well."""
    dump = tmp_path / "dump.json"
    trace, params = _run_side(tmp_path, ORIGINAL, "manual_clamp_opt_cpu.py", "--dump", str(dump))
    logged = json.loads(dump.read_text())
    assert len(logged) == 4  # stopped inside the 5th optimizer.step(), before its dump
    assert trace["status"] == "stopped" and trace["step_kind"] == "optimizer"
    assert [s["loss"] for s in trace["steps"]][:4] == [entry["loss"] for entry in logged]
    assert len(trace["steps"]) == 5
    assert list(params) == [f"optimizer0.group0.param{j}" for j in range(4)]


def test_an_optimizer_run_on_xla_counts_only_its_optimizer_steps(tmp_path):
    trace, params = _run_side(tmp_path, MIGRATED, "manual_clamp_opt_xla.py", "--updates", "3")
    assert trace["status"] == "finished" and trace["step_kind"] == "optimizer"
    assert len(trace["steps"]) == 3
    assert list(params) == [f"optimizer0.group0.param{j}" for j in range(4)]


def test_optimizer_port_with_weight_clipping_is_equivalent(verify_cli):
    outcome = verify_cli(
        script("manual_clamp_opt_cpu.py"), "--migrated", script("manual_clamp_opt_xla.py")
    )
    assert outcome.code == 0, outcome.out + outcome.err
    assert outcome.result["verdict"] == "equivalent"
    assert [s["step"] for s in outcome.result["steps"]] == [1, 2, 3, 4, 5]
    assert outcome.result["params"]["count"] == 4


def test_updates_of_raw_leaf_tensors_are_seen_at_the_next_backward(tmp_path):
    dump = tmp_path / "dump.json"
    trace, params = _run_side(tmp_path, ORIGINAL, "manual_functional_cpu.py", "--dump", str(dump))
    logged = json.loads(dump.read_text())
    assert len(logged) == 5  # stopped at the 6th backward(), before the 6th update
    assert trace["status"] == "stopped" and trace["step_kind"] == "manual"
    assert [s["loss"] for s in trace["steps"]] == [entry["loss"] for entry in logged]
    _assert_params_are(params, "manual.param", logged[-1]["params"])


def test_functional_port_is_equivalent(verify_cli):
    outcome = verify_cli(
        script("manual_functional_cpu.py"), "--migrated", script("manual_functional_xla.py")
    )
    assert outcome.code == 0, outcome.out + outcome.err
    assert outcome.result["verdict"] == "equivalent"
    assert [s["step"] for s in outcome.result["steps"]] == [1, 2, 3, 4, 5]
    assert outcome.result["params"]["count"] == 2
    assert outcome.result["hygiene"]["host_transfers_per_step"] == 0
