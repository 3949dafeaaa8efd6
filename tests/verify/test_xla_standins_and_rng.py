"""The migrated side's CPU stand-ins for TPU runtime APIs (xla_standins.py) and its random draws
taken from the CPU generator (rng_align.py), in real instrumented processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.verify.runner import MIGRATED, ORIGINAL, SideSpec, command, protocol, side_env
from tests.verify.helpers import script

pytestmark = [pytest.mark.xla, pytest.mark.usefixtures("xla_available")]
FAST = ("--fixed-tolerance",)  # no noise run: the tests check their own bounds


def _run_side(tmp_path: Path, side: str, path: str, args: list[str], **config) -> dict:
    """Run one side under the bootstrap; its root trace."""
    traces = tmp_path / f"traces-{side}"
    traces.mkdir()
    config = protocol.Config(side=side, trace_dir=str(traces), steps=5, seed=0, **config)
    spec = SideSpec(side, Path(path), args, tmp_path, sys.executable, config)
    proc = subprocess.run(
        command(spec), cwd=tmp_path, env=side_env(spec), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(next(traces.glob(f"trace-{side}-*.json")).read_text())


def _draws(tmp_path: Path, align_rng: bool = True) -> tuple[dict, dict, dict]:
    torch = pytest.importorskip("torch")
    saved = {}
    for side, extra in ((ORIGINAL, []), (MIGRATED, ["--xla"])):
        out = tmp_path / f"{side}.pt"
        trace = _run_side(
            tmp_path,
            side,
            script("rngalign_draws.py"),
            [str(out), *extra],
            keep_dropout=True,
            align_rng=align_rng,
        )
        saved[side] = torch.load(out)
    return saved[ORIGINAL], saved[MIGRATED], trace


def test_aligned_draws_on_xla_are_bitwise_the_cpu_draws_of_the_original(tmp_path):
    import torch

    original, migrated, trace = _draws(tmp_path)
    assert original.keys() == migrated.keys() and len(original) > 40
    differing = [
        name
        for name in original
        if original[name].dtype != migrated[name].dtype
        or not torch.equal(original[name], migrated[name])
    ]
    assert differing == []  # values, dtypes and the generator state afterwards
    assert original["requires_grad leaf"].tolist() == [True, True]
    notes = trace["notes"]
    for name in (
        "randn",
        "randperm",
        "randn_like",
        "normal_",
        "bernoulli",
        "multinomial",
        "normal",
    ):
        assert notes[f"rng:{name}"] >= 1, notes
    assert notes["rng:dropout"] == 2 and notes["rng:feature_dropout"] == 1
    assert notes["rng-unaligned:poisson"] == 1


def test_without_alignment_xla_draws_from_its_own_rng(tmp_path):
    import torch

    original, migrated, trace = _draws(tmp_path, align_rng=False)
    for name in ("randn", "randn_like", "normal_", "bernoulli(p)", "multinomial repl", "dropout"):
        assert not torch.equal(original[name], migrated[name]), name
    assert torch.equal(original["generator"], migrated["generator"])  # an explicit CPU generator
    assert not any(key.startswith("rng") for key in trace["notes"])


def test_instrumentation_does_not_start_the_xla_runtime(tmp_path):
    """torch_xla.launch / xmp.spawn scripts must be able to start it themselves (xla_probe.py)."""
    check = tmp_path / "check.py"
    check.write_text(
        "import json, torch, torch_xla\n"
        "import torch_xla.core.xla_model as xm\n"
        "x = torch.randn(3) + torch.nn.Linear(2, 2).weight.sum()\n"
        "torch.empty(4).uniform_(); torch.bernoulli(torch.rand(5))\n"
        "print(json.dumps(torch_xla._XLAC._xla_runtime_is_initialized()))\n"
    )
    traces = tmp_path / "traces"
    traces.mkdir()
    config = protocol.Config(side=MIGRATED, trace_dir=str(traces), steps=5, seed=0)
    spec = SideSpec(MIGRATED, check, [], tmp_path, sys.executable, config)
    proc = subprocess.run(
        command(spec), cwd=tmp_path, env=side_env(spec), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) is False


def test_device_loader_reads_in_the_training_thread_so_draws_keep_their_order(verify_cli):
    """The data draws from the global generator and the step draws device noise from it too (aligned):
    MpDeviceLoader reading ahead in its thread would interleave the two by timing."""
    outcome = verify_cli(
        script("augmented_loader_cuda.py"),
        "--migrated",
        script("augmented_loader_xla.py"),
        "--steps",
        "6",
        *FAST,
    )
    assert outcome.code == 0, outcome.out + outcome.err
    assert all(step["rel_diff"] <= 1e-5 for step in outcome.result["steps"])
    notes = "\n".join(outcome.result["notes"])
    assert "device loaders (pl.MpDeviceLoader/ParallelLoader x1) read each batch in the" in notes
    assert "randn x6" in notes
    hygiene = outcome.result["hygiene"]
    assert hygiene["executions_per_step"] == 1.0 and hygiene["compilations_after_warmup"] == 0


def test_device_noise_each_step_is_equivalent_once_aligned(verify_cli):
    """DCGAN-style noise (randn(device=...)), soft labels (rand) and reparameterisation (randn_like)."""
    outcome = verify_cli(
        script("rngalign_gan_cuda.py"),
        "--migrated",
        script("rngalign_gan_xla.py"),
        "--steps",
        "8",
        *FAST,
    )
    assert outcome.code == 0, outcome.out + outcome.err
    assert all(step["rel_diff"] <= 1e-5 for step in outcome.result["steps"])
    hygiene = outcome.result["hygiene"]
    assert hygiene["host_transfers_per_step"] == 0  # host->device only
    notes = "\n".join(outcome.result["notes"])
    assert (
        "random draws of the migrated run taken from the CPU generator, as in the original: "
        "randn x4, randn_like x4, rand x4" in notes
    )

    unaligned = verify_cli(
        script("rngalign_gan_cuda.py"),
        "--migrated",
        script("rngalign_gan_xla.py"),
        "--steps",
        "8",
        "--no-align-rng",
        *FAST,
    )
    assert unaligned.code == 1, unaligned.out + unaligned.err
    assert unaligned.result["verdict"] == "different"
    assert unaligned.result["first_diverging_step"] == 1
    assert unaligned.result["hygiene"]["compilations"] == hygiene["compilations"]
    assert any("--no-align-rng" in note for note in unaligned.result["notes"])


def test_kept_dropout_draws_the_same_masks_once_aligned(verify_cli):
    outcome = verify_cli(
        script("mlp_cuda.py"),
        "--migrated",
        script("mlp_xla.py"),
        "--keep-dropout",
        "--steps",
        "8",
        *FAST,
    )
    assert outcome.code == 0, outcome.out + outcome.err
    assert max(step["rel_diff"] for step in outcome.result["steps"]) <= 1e-6
    assert outcome.result["params"]["max_rel_diff"] <= 1e-6
    notes = "\n".join(outcome.result["notes"])
    assert "the migrated run drew its masks from the CPU generator" in notes
    assert "dropout x8" in notes

    unaligned = verify_cli(
        script("mlp_cuda.py"),
        "--migrated",
        script("mlp_xla.py"),
        "--keep-dropout",
        "--steps",
        "2",
        "--no-align-rng",
        *FAST,
    )
    assert unaligned.code == 1 and unaligned.result["first_diverging_step"] == 1
    assert any("CPU and XLA draw different random masks" in n for n in unaligned.result["notes"])


def test_tpu_runtime_apis_get_cpu_stand_ins(verify_cli):
    """xm.get_memory_info (UNIMPLEMENTED on XLA:CPU), also imported by name; torch_xla.amp.autocast;
    TPU metadata (tpu.version()), the host's TPU device count and xr.get_master_ip: the correct port
    crashes or stops on XLA:CPU without them.
    """
    outcome = verify_cli(
        script("standin_memory_cuda.py"), "--migrated", script("standin_memory_xla.py"), *FAST
    )
    assert outcome.code == 0, outcome.out + outcome.err
    note = next(n for n in outcome.result["notes"] if n.startswith("TPU runtime APIs"))
    assert note == (
        "TPU runtime APIs that XLA:CPU cannot run were given CPU stand-ins in the migrated run: "
        "xm.get_memory_info x10, torch_xla.amp.autocast x5, tpu.get_tpu_env x1, "
        "xr.get_master_ip x1, tpu.num_available_devices x1"
    )
    autocast = next(n for n in outcome.result["notes"] if n.startswith("autocast disabled"))
    assert "5 region(s) in the original run, 5 in the migrated run" in autocast


def test_the_port_needs_the_stand_ins_on_xla_cpu(tmp_path):
    """Without the bootstrap the same script fails on XLA:CPU: the stand-ins are not hiding a bug."""
    import os

    env = dict(os.environ, PJRT_DEVICE="CPU", CPU_NUM_DEVICES="1")
    env.pop(protocol.CONFIG_ENV, None)
    probe = (
        "import torch_xla, torch_xla.core.xla_model as xm\n"
        "try:\n    xm.get_memory_info(torch_xla.device())\n"
        "except RuntimeError as exc:\n    print('failed:', exc)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300
    )
    assert "failed:" in proc.stdout and "GetAllocatorStats" in proc.stdout, proc.stderr[-2000:]
