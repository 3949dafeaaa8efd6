"""CUDA forms of real training scripts, run on the CPU by the original side of `tpu-migrate verify`.

Each script in scripts/cudaform_*.py checks what it can see from inside (asserts: a failed check is
a non-zero exit) and trains; here each is run as the verifier runs the original (bootstrap
environment, real subprocess), and must exit 0 having made its optimizer steps, with the mapping
counted. Two of them also go through `verify` end to end against a hand-written XLA port.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from migrate.verify.runner import ORIGINAL, SideSpec, command, free_port, protocol, side_env
from tests.verify.helpers import script

pytestmark = pytest.mark.slow  # runs torch training scripts in subprocesses

STEPS = 4


@dataclass
class OriginalRun:
    proc: subprocess.CompletedProcess
    traces: list[dict]

    @property
    def trace(self) -> dict:
        """The trace of the process that trained: the script's own (the root one)."""
        roots = [t for t in self.traces if t["is_root"]]
        assert len(roots) == 1, self.explain()
        return roots[0]

    @property
    def notes(self) -> dict:
        return self.trace["notes"]

    @property
    def losses(self) -> list[float]:
        return [s["loss"] for s in self.trace["steps"]]

    def explain(self) -> str:
        return (
            f"exit {self.proc.returncode}\n{self.proc.stdout[-2000:]}\n{self.proc.stderr[-4000:]}"
        )


def run_original(
    tmp_path: Path, name: str, *args: str, steps: int = STEPS, keep_autocast: bool = False
) -> OriginalRun:
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir(parents=True)
    config = protocol.Config(
        side=ORIGINAL,
        trace_dir=str(trace_dir),
        steps=steps,
        seed=0,
        keep_autocast=keep_autocast,
    )
    spec = SideSpec(ORIGINAL, Path(script(name)), list(args), tmp_path, sys.executable, config)
    proc = subprocess.run(
        command(spec), cwd=tmp_path, env=side_env(spec), capture_output=True, text=True, timeout=300
    )
    traces = [json.loads(p.read_text()) for p in sorted(trace_dir.glob("trace-original-*.json"))]
    return OriginalRun(proc, traces)


def assert_trained(run: OriginalRun, steps: int = STEPS) -> None:
    """Exit 0, stopped by the verifier at the step limit, one finite loss per optimizer step."""
    assert run.proc.returncode == 0, run.explain()
    trace = run.trace
    assert trace["status"] == protocol.STOPPED and trace["error"] is None, run.explain()
    assert [s["step"] for s in trace["steps"]] == list(range(1, steps + 1))
    assert all(loss is not None and math.isfinite(loss) for loss in run.losses), run.losses
    assert trace["param_devices"] == ["cpu"] and trace["param_count"] > 0


# 1. DataParallel


@pytest.fixture(scope="module")
def bare_module_losses(tmp_path_factory):
    """The losses of cudaform_dataparallel.py without any wrapper."""
    run = run_original(
        tmp_path_factory.mktemp("bare"), "cudaform_dataparallel.py", "--form", "none"
    )
    assert_trained(run)
    assert "cuda:DataParallel" not in run.notes and "cuda:data_parallel" not in run.notes
    return run.losses


@pytest.mark.parametrize("form", ["plain", "ids", "features", "function"])
def test_data_parallel_calls_the_module_on_the_cpu(tmp_path, form, bare_module_losses):
    run = run_original(tmp_path, "cudaform_dataparallel.py", "--form", form)
    assert_trained(run)
    key = "data_parallel" if form == "function" else "DataParallel"
    assert run.notes[f"cuda:{key}"] >= 1
    assert run.notes["cuda:.cuda()"] >= 2 * STEPS and run.notes["cuda:pin_memory"] == 1
    assert run.losses == bare_module_losses  # bit for bit: the module itself, no scatter/gather


# 2. DistributedDataParallel at world size 1


@pytest.mark.parametrize(
    "extra",
    [(), ("--tcp", "--sync-bn", "--barrier")],
    ids=["env", "tcp-syncbn-barrier"],
)
def test_ddp_over_nccl_runs_on_gloo_at_world_size_one(tmp_path, extra):
    args = ["--gpu", "0"]
    if "--tcp" in extra:
        args += ["--init-method", f"tcp://127.0.0.1:{free_port()}"]
    args += [a for a in extra if a != "--tcp"]
    run = run_original(tmp_path, "cudaform_ddp.py", *args)
    assert_trained(run)
    notes = run.notes
    assert notes["cuda:nccl->gloo"] == 1 and notes["cuda:ddp_device_ids"] == 1
    assert notes["cuda:torch.cuda.set_device"] == 1 and notes["cuda:pin_memory"] == 1
    if "--sync-bn" in extra:
        assert notes["cuda:SyncBatchNorm"] >= STEPS
    if "--barrier" in extra:
        assert notes["cuda:barrier(device_ids)"] == 1
    assert run.trace["rank"] == 0 and run.trace["rank_source"] == "torch.distributed"


# 3. Device arguments and legacy tensor types


def test_every_device_spelling_lands_on_the_cpu(tmp_path):
    run = run_original(tmp_path, "cudaform_devices.py", "--gpu", "0", steps=6)
    assert_trained(run, steps=6)
    notes = run.notes
    assert notes["cuda:.cuda()"] >= 6 * 4 and notes["cuda:device"] >= 6 * 5
    assert notes["cuda:torch.cuda.FloatTensor"] == 2 and notes["cuda:torch.cuda.LongTensor"] == 1
    assert re.search(r"^step 4 loss \d", run.proc.stdout, re.M), run.explain()  # 6th: stopped


# 4, 7, 8. Device selection, streams, events, cuDNN flags


def test_device_selection_streams_events_and_cudnn_flags(tmp_path):
    run = run_original(tmp_path, "cudaform_runtime.py", steps=7)  # crosses into the second epoch
    assert_trained(run, steps=7)
    notes = run.notes
    assert notes["cuda:record_stream"] == 2 * 7 and notes["cuda:torch.cuda.synchronize"] == 6
    assert notes["cuda:torch.cuda.current_stream"] >= 3 * 7
    assert notes["cuda:torch.cuda.set_device"] == 1
    timings = re.findall(r"loss [\d.]+ ([\d.]+) ms", run.proc.stdout)
    assert len(timings) == 6, run.explain()  # the 7th step stopped the run before printing


# 5. Mixed precision


@pytest.mark.parametrize(
    ("api", "keep_autocast", "clip"),
    [("cuda_amp", False, False), ("amp", True, True)],
    ids=["torch.cuda.amp", "torch.amp-kept-autocast-unscale-clip"],
)
def test_grad_scaler_steps_the_optimizer_and_the_unscaled_loss_is_recorded(
    tmp_path, api, keep_autocast, clip
):
    args = ["--api", api] + (["--clip"] if clip else [])
    run = run_original(tmp_path, "cudaform_amp.py", *args, steps=5, keep_autocast=keep_autocast)
    assert_trained(run, steps=5)
    printed = [float(v) for v in re.findall(r"^loss=(\S+)$", run.proc.stdout, re.M)]
    assert len(printed) == 5, run.explain()
    assert run.losses == pytest.approx(printed, rel=1e-6)  # the loss, not loss * 65536
    assert len(set(run.losses)) == 5  # the parameters moved at every step
    if keep_autocast:
        assert run.notes["cuda:autocast"] == 5 and "autocast" not in run.notes
    else:
        assert run.notes["autocast"] == 5 and "cuda:autocast" not in run.notes


# 6. Pinned memory


def test_pinned_memory_and_non_blocking_copies(tmp_path):
    run = run_original(tmp_path, "cudaform_pinned.py", "--workers", "1", steps=8)
    assert_trained(run, steps=8)
    # the loader, the dataset's tensor, the two pin_memory=True factories, the guard after each
    # staging copy, each batch's target
    assert run.notes["cuda:pin_memory"] == 1 + 1 + 2 + 8 + 8
    assert run.notes["cuda:device"] == 1 + 8 * 2  # model.to(device), x and y .to(device) per step


# End to end: verify reaches "equivalent" against a correct XLA port


@pytest.mark.xla
@pytest.mark.usefixtures("xla_available")
@pytest.mark.parametrize(
    ("original", "migrated", "mapped"),
    [
        ("cudaform_dataparallel.py", "cudaform_dataparallel_xla.py", "DataParallel x1"),
        ("cudaform_amp.py", "cudaform_amp_xla.py", "device x"),
    ],
    ids=["DataParallel", "GradScaler"],
)
def test_verify_finds_the_cpu_run_equivalent_to_the_xla_port(
    verify_cli, original, migrated, mapped
):
    outcome = verify_cli(script(original), "--migrated", script(migrated))
    assert outcome.code == 0, outcome.out + outcome.err
    result = outcome.result
    assert result["verdict"] == "equivalent", outcome.out
    assert [s["step"] for s in result["steps"]] == [1, 2, 3, 4, 5]
    assert all(s["rel_diff"] <= 1e-5 for s in result["steps"])
    assert result["params"]["max_rel_diff"] <= 1e-5
    notes = "\n".join(result["notes"])
    assert "CUDA mapped to the CPU" in notes
    assert mapped in notes
