"""`tpu-migrate verify` end to end: real subprocesses, plain torch on the CPU against torch_xla on XLA:CPU."""

from __future__ import annotations

import shutil

import pytest

from tests.fixtures.goldens import all_fixtures
from tests.verify.helpers import script

pytestmark = [pytest.mark.xla, pytest.mark.usefixtures("xla_available")]


def test_correct_migration_is_equivalent(verify_cli):
    outcome = verify_cli(script("mlp_cuda.py"), "--migrated", script("mlp_xla.py"))
    assert outcome.code == 0, outcome.out + outcome.err
    result = outcome.result
    assert result["verdict"] == "equivalent"
    assert [s["step"] for s in result["steps"]] == [1, 2, 3, 4, 5]
    for step in result["steps"]:
        assert set(step) >= {"step", "original_loss", "migrated_loss", "rel_diff"}
        assert step["rel_diff"] <= 1e-5
    assert result["params"]["count"] == 4 and result["params"]["max_rel_diff"] <= 1e-5
    assert result["runs"]["original"]["param_devices"] == ["cpu"]
    assert result["runs"]["migrated"]["param_devices"] == ["xla"]
    hygiene = result["hygiene"]
    assert set(hygiene) >= {
        "compilations",
        "compilations_after_warmup",
        "executions_per_step",
        "host_transfers_per_step",
        "fallback_ops",
    }
    assert hygiene["compilations"] == 2 and hygiene["compilations_after_warmup"] == 0
    assert hygiene["executions_per_step"] == 1.0
    notes = "\n".join(result["notes"])
    assert "dropout disabled" in notes and "5 dropout call(s) in the original run" in notes
    assert "CUDA mapped to the CPU" in notes and "pin_memory" in notes
    assert "bounds measured by 2 noise runs" in notes
    assert {"original", "migrated", "noise-1", "noise-2"} == set(result["runs"])
    assert "noise-2:" in outcome.out and "CPU, nudged" in outcome.out
    for header in ("step", "original loss", "migrated loss", "rel diff"):
        assert header in outcome.out
    assert "parameters: 4 tensors" in outcome.out
    assert "graph compilations        2 (0 after warm-up)" in outcome.out
    assert outcome.out.rstrip().endswith(
        "verdict: equivalent (losses and final parameters match over 5 step(s))"
    )


@pytest.mark.parametrize(
    ("broken", "step"),
    [("broken_data_xla.py", 1), ("broken_lr_xla.py", 2), ("broken_no_zero_grad_xla.py", 3)],
    ids=["other-data", "other-lr", "no-zero-grad"],
)
def test_broken_migration_names_the_first_diverging_step(verify_cli, broken, step):
    outcome = verify_cli(script("mlp_cuda.py"), "--migrated", script(broken))
    assert outcome.code == 1, outcome.out + outcome.err
    assert outcome.result["verdict"] == "different"
    assert outcome.result["first_diverging_step"] == step
    assert [s["step"] for s in outcome.result["steps"] if s["rel_diff"] > 1e-5][0] == step
    assert f"the losses diverge at step {step}:" in outcome.out


def test_a_loop_that_trains_nothing_is_inconclusive(verify_cli, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(script("single_class_cuda.py"), project / "train.py")
    outcome = verify_cli(str(project / "train.py"), "--steps", "3")
    assert outcome.code == 5, outcome.out + outcome.err
    assert outcome.result["verdict"] == "inconclusive"
    assert [s["original_loss"] for s in outcome.result["steps"]] == [0.0, 0.0, 0.0]
    assert outcome.result["reason"].startswith(
        "the original run trained nothing: its 3 step(s) left all 2 parameter tensor(s) unchanged"
    )
    assert "verdict: inconclusive - the original run trained nothing" in outcome.out


def test_crashing_migration_is_a_failed_run_with_its_stderr(verify_cli):
    outcome = verify_cli(script("mlp_cuda.py"), "--migrated", script("broken_crash_xla.py"))
    assert outcome.code == 2, outcome.out + outcome.err
    failure = outcome.result["failure"]
    assert outcome.result["verdict"] == "failed" and failure["side"] == "migrated"
    assert "has no attribute 'get_ordinal'" in failure["stderr_tail"]  # the script's own error
    assert "stderr of the migrated run" in outcome.out and "get_ordinal" in outcome.out
    assert "verdict: failed - the migrated run failed: exited with status 1" in outcome.out


def test_original_that_needs_cuda_runs_its_cuda_path_on_the_cpu(verify_cli):
    outcome = verify_cli(script("cuda_only.py"), "--migrated", script("cuda_only_xla.py"))
    assert outcome.code == 0, outcome.out + outcome.err
    mapping = next(note for note in outcome.result["notes"] if note.startswith("CUDA mapped"))
    assert ".cuda()" in mapping and "torch.cuda.set_device" in mapping


def test_an_original_that_trains_on_xla_is_no_reference(verify_cli):
    outcome = verify_cli(
        script("mlp_xla.py"), "--migrated", script("mlp_xla.py"), "--fixed-tolerance"
    )
    assert outcome.code == 2, outcome.out + outcome.err
    failure = outcome.result["failure"]
    assert failure["side"] == "original" and "trained on XLA" in failure["message"]
    assert outcome.result["runs"]["original"]["param_devices"] == ["xla"]
    assert "comparison would be XLA against XLA" in outcome.out


def test_original_cpu_path_leaves_cuda_alone(verify_cli):
    outcome = verify_cli(
        script("cuda_only.py"), "--migrated", script("cuda_only_xla.py"), "--original-cpu-path"
    )
    assert outcome.code == 2, outcome.out + outcome.err
    assert outcome.result["failure"]["side"] == "original"
    assert "untouched on the CPU (--original-cpu-path)" in outcome.out
    assert "the original needs CUDA: without --original-cpu-path" in outcome.out


def test_a_run_past_its_time_limit_is_a_failed_run(verify_cli):
    outcome = verify_cli(script("sleeps.py"), "--migrated", script("sleeps.py"), "--timeout", "2")
    assert outcome.code == 2
    assert outcome.result["failure"]["message"] == "timed out after 2 s"
    assert outcome.result["runs"]["original"]["seconds"] < 30


def test_work_launched_in_child_processes_is_verified(verify_cli):
    """mp.spawn + NCCL + DDP on the original side, torch_xla.launch on the migrated side."""
    outcome = verify_cli(script("spawn_cuda.py"), "--migrated", script("spawn_xla.py"))
    assert outcome.code == 0, outcome.out + outcome.err
    runs = outcome.result["runs"]
    assert runs["original"]["processes"] == 2 and runs["migrated"]["processes"] == 2
    notes = "\n".join(outcome.result["notes"])
    assert "the original run trained in a child process" in notes
    assert "the migrated run trained in a child process" in notes
    assert "nccl->gloo" in notes and "ddp_device_ids" in notes


def test_hygiene_of_a_naive_loop_is_worse_than_the_idiomatic_one(verify_cli):
    """Idioms doc 5.1: partial last batch + per-step .item() -> more graphs, executions and transfers."""
    naive = verify_cli(
        script("loop_cuda.py"),
        "--migrated",
        script("loop_naive_xla.py"),
        "--steps",
        "8",
        "--strict",
    )
    fixed = verify_cli(
        script("loop_cuda.py"),
        "--migrated",
        script("loop_fixed_xla.py"),
        "--steps",
        "8",
        "--strict",
        "--",
        "--drop-last",
    )
    assert fixed.code == 0, fixed.out + fixed.err
    assert naive.code == 1, naive.out + naive.err  # numerically equivalent, but --strict
    assert all(s["rel_diff"] <= 1e-5 for s in naive.result["steps"])
    assert naive.result["strict_failures"] and naive.result["verdict"] == "different"
    bad, good = naive.result["hygiene"], fixed.result["hygiene"]
    assert bad["compilations"] > good["compilations"] == 2
    assert bad["compilations_after_warmup"] > good["compilations_after_warmup"] == 0
    assert bad["executions_per_step"] == 2.0 and good["executions_per_step"] == 1.0
    assert bad["host_transfers_per_step"] == 1.0 > good["host_transfers_per_step"]
    assert bad["mid_step_transfers"] > good["mid_step_transfers"] == 0
    assert "aten::_local_scalar_dense" in bad["fallback_ops"]


def test_kept_dropout_draws_its_masks_from_the_cpu_generator(verify_cli):
    kept = verify_cli(
        script("mlp_cuda.py"), "--migrated", script("mlp_xla.py"), "--keep-dropout", "--steps", "2"
    )
    assert kept.code == 0, kept.out + kept.err
    assert any(
        "dropout kept (--keep-dropout): the migrated run drew" in n for n in kept.result["notes"]
    )
    off = verify_cli(script("mlp_cuda.py"), "--migrated", script("mlp_xla.py"), "--steps", "2")
    assert off.code == 0, off.out + off.err
    assert any(
        "dropout disabled on both sides (--keep-dropout keeps it): 2 dropout call(s)" in n
        for n in off.result["notes"]
    )
    assert kept.result["steps"][0]["original_loss"] != off.result["steps"][0]["original_loss"]


def test_automatic_migration_of_a_temporary_copy(verify_cli, tmp_path):
    """Needs the codemods TPU101 (.to("cuda") -> device) and TPU102 (step boundary)."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(script("auto_simple_cuda.py"), project / "train.py")
    original_text = (project / "train.py").read_text()
    outcome = verify_cli(str(project / "train.py"))
    assert outcome.code == 0, outcome.out + outcome.err
    assert any(
        note.startswith("migrated into a temporary shadow") for note in outcome.result["notes"]
    )
    assert outcome.result["migrated_script"] != str(project / "train.py")
    assert (project / "train.py").read_text() == original_text  # the user's files are never touched


RUNNABLE = [f for f in all_fixtures() if f.run and f.original_runs_on_cpu]


@pytest.mark.parametrize("fixture", RUNNABLE, ids=[f.name for f in RUNNABLE])
def test_fixture_migrations_are_equivalent(verify_cli, fixture):
    """Each runnable fixture's golden migration (after/) trains like its original (before/)."""
    migrated = fixture.after / fixture.run["script"]
    assert migrated.is_file(), f"fixture {fixture.name} has no golden after/"
    outcome = verify_cli(
        str(fixture.before / fixture.run["script"]),
        "--migrated",
        str(migrated),
        "--cwd",
        str(fixture.before),
        *fixture.verify_args,
        "--",
        *fixture.run.get("args", []),
    )
    assert outcome.code == 0, outcome.out + outcome.err
