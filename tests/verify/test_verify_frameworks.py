"""`tpu-migrate verify` on framework-managed scripts (Accelerate, the Hugging Face Trainer,
Lightning): the fixtures' originals against their golden migrations. The original takes the
framework's GPU path on the CPU, the migrated its XLA path on XLA:CPU, and what the framework does
differently between the two paths is held equal (bootstrap/_tpu_migrate_verify/frameworks.py)."""

from __future__ import annotations

import os

import pytest

from tests.fixtures.goldens import FIXTURES, all_fixtures

pytestmark = [pytest.mark.xla, pytest.mark.usefixtures("xla_available")]

ONE_AUTOCAST_REGION_OFF_EACH_SIDE = (
    "autocast disabled on both sides for an fp32 comparison: 1 region(s) in the original run, "
    "1 in the migrated run"
)
# fixture -> (its framework's package, where its golden migration sets the learning rate)
FRAMEWORKS = {
    "accelerate_classifier": ("accelerate", '"--lr", type=float, default=2e-3'),
    "hf_trainer_bert": ("transformers", "learning_rate=5e-4"),
    "lightning_classifier": ("lightning", '"--lr", type=float, default=1e-3'),
}


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the model is built from a config: no download


def _fixture(name: str):
    # CI installs the frameworks extra: a skip there would hide a failure
    if not os.environ.get("CI"):
        pytest.importorskip(FRAMEWORKS[name][0])
    return next(f for f in all_fixtures() if f.name == name)


def _verify(verify_cli, name: str, migrated: str | None = None, *options: str):
    """Verify the fixture's original against ``migrated`` (its golden migration by default)."""
    fixture = _fixture(name)
    script = fixture.run["script"]
    return verify_cli(
        str(fixture.before / script),
        "--migrated",
        migrated or str(fixture.after / script),
        "--cwd",
        str(fixture.before),
        *options,
        "--",
        *fixture.run["args"],
    )


def _equivalent(verify_cli, name: str) -> tuple[dict, str]:
    """The golden migration is equivalent: the original (and its noise runs) on the CPU, the
    migrated run on XLA. The result, and its notes as one text."""
    outcome = _verify(verify_cli, name, None, "--steps", "4")
    assert outcome.code == 0, outcome.out + outcome.err
    result = outcome.result
    assert result["verdict"] == "equivalent"
    assert [s["step"] for s in result["steps"]] == [1, 2, 3, 4]
    assert result["margin"]["ratio"] < 0.5
    runs = result["runs"]
    assert runs["original"]["param_devices"] == runs["noise-1"]["param_devices"] == ["cpu"]
    assert runs["migrated"]["param_devices"] == ["xla"]
    assert result["hygiene"]["compilations"] > 0
    return result, "\n".join(result["notes"])


def test_accelerate_script_is_equivalent_with_the_shuffle_aligned(verify_cli):
    _, notes = _equivalent(verify_cli, "accelerate_classifier")
    assert "the original run had USE_TORCH_XLA=0" in notes
    assert "the original run seeded its 1 shuffling loader(s) as on XLA" in notes
    assert "nccl->gloo" in notes  # Accelerate's multi-GPU path, at world size 1
    assert ONE_AUTOCAST_REGION_OFF_EACH_SIDE in notes


def test_hf_trainer_script_is_equivalent(verify_cli):
    """fp16 and the fused AdamW on the CPU (CUDA mapped) against bf16 and AdamW on XLA."""
    result, notes = _equivalent(verify_cli, "hf_trainer_bert")
    assert result["params"]["count"] > 30  # every BERT tensor the optimizer steps
    assert "the original run had USE_TORCH_XLA=0" in notes
    assert "the original run seeded its 1 shuffling loader(s) as on XLA" in notes
    assert ONE_AUTOCAST_REGION_OFF_EACH_SIDE in notes
    assert "0 dropout call(s)" not in notes  # BERT's dropout, off on both sides


def test_lightning_script_is_equivalent_on_the_tpu_path(verify_cli):
    """accelerator="tpu" on XLA:CPU: the TPU device count stood in, bf16-true storage off for the
    fp32 comparison, the original's DDP over one device run as one device."""
    _, notes = _equivalent(verify_cli, "lightning_classifier")
    assert "tpu.num_available_devices" in notes
    assert "Lightning's bf16-true/16-true on XLA" in notes and "switched off" in notes
    assert "Lightning's DDP strategy over the original run's one device" in notes
    assert "autocast disabled on both sides" in notes  # the original's 16-mixed


@pytest.mark.parametrize("name", sorted(FRAMEWORKS))
def test_framework_migration_with_another_learning_rate_is_different(verify_cli, tmp_path, name):
    golden = FIXTURES / name / "after" / "train.py"
    setting = FRAMEWORKS[name][1]
    text = golden.read_text(encoding="utf-8")
    assert setting in text
    migrated = tmp_path / "train.py"
    migrated.write_text(text.replace(setting, f"{setting} * 1.5"), encoding="utf-8")
    outcome = _verify(verify_cli, name, str(migrated), "--steps", "3", "--noise-runs", "1")
    assert outcome.code == 1, outcome.out + outcome.err
    assert outcome.result["verdict"] == "different"
    assert outcome.result["first_diverging_step"] == 2  # step 1's loss comes before any update
    assert outcome.result["runs"]["original"]["param_devices"] == ["cpu"]
