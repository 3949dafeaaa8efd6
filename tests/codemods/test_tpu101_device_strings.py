"""TPU101 on a nanoGPT-style configuration: the migrated script follows its device string.

``fixtures/nanogpt_config`` sets ``device = 'cuda'`` at module level (overridable with
``--device=...``), derives ``device_type`` from it and picks a fused AdamW when
``device_type == 'cuda'``. Migrated, the default must run on XLA without a fused optimizer
(fused kernels do not take XLA tensors) and ``--device=cpu`` must still run on the CPU.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MIGRATED = ROOT / "fixtures" / "nanogpt_config" / "after"
XLA_SITE = ROOT / "tests" / "fixtures" / "xla_site"  # its sitecustomize reports XLA executions


def _run(*args: str) -> tuple[subprocess.CompletedProcess, int]:
    if not os.environ.get("CI"):
        pytest.importorskip("torch_xla")
    pythonpath = os.pathsep.join(filter(None, [str(XLA_SITE), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PJRT_DEVICE": "CPU", "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": pythonpath}
    proc = subprocess.run(
        [sys.executable, "train.py", "--max_iters=3", *args],
        cwd=MIGRATED,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    executions = [int(n) for n in re.findall(r"TPU_MIGRATE_XLA_EXECUTIONS=(\d+)", proc.stdout)]
    return proc, max(executions, default=0)


@pytest.mark.xla
def test_default_device_trains_on_xla_without_fused_optimizer():
    proc, executions = _run()
    assert "using fused AdamW: False" in proc.stdout
    assert "done on xla" in proc.stdout
    assert executions > 0, "the migrated default did not execute on XLA"


@pytest.mark.xla
def test_explicit_cpu_device_still_trains_on_the_cpu():
    proc, executions = _run("--device=cpu")
    assert "using fused AdamW: False" in proc.stdout
    assert "done on cpu" in proc.stdout
    assert executions == 0, "--device=cpu ran graphs on XLA"
