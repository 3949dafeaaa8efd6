"""The framework paths of both runs: which path each run takes (runner.side_env), the post-import
hook the framework patches hang on (startup._AfterImport), and the patches themselves
(bootstrap/_tpu_migrate_verify/frameworks.py), checked in instrumented processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from migrate.verify.runner import (
    BOOTSTRAP_DIR,
    MIGRATED,
    ORIGINAL,
    SideSpec,
    command,
    protocol,
    side_env,
)


def _spec(side: str, script: Path = Path("train.py"), **config) -> SideSpec:
    config = protocol.Config(side=side, trace_dir=str(script.parent), steps=5, seed=0, **config)
    return SideSpec(side, script, [], script.parent, sys.executable, config)


def test_the_original_takes_the_frameworks_torch_path_and_the_migrated_their_xla_path():
    """Accelerate and transformers take XLA whenever torch_xla imports, unless USE_TORCH_XLA=0."""
    user = {"USE_TORCH_XLA": "0"}  # a user's setting cannot keep the migrated run off XLA
    assert side_env(_spec(ORIGINAL), base={})["USE_TORCH_XLA"] == "0"
    assert side_env(_spec(MIGRATED), base=user)["USE_TORCH_XLA"] == "1"


def test_a_module_only_looked_for_is_instrumented_when_it_is_imported(tmp_path):
    """Lightning's RequirementCache calls importlib.util.find_spec("torch_xla") before importing it."""
    (tmp_path / "probed.py").write_text("VALUE = 1\n")
    code = textwrap.dedent(f"""
        import importlib.util, sys
        sys.path[:0] = [{str(BOOTSTRAP_DIR)!r}, {str(tmp_path)!r}]
        from _tpu_migrate_verify import startup
        calls = []
        sys.meta_path.insert(0, startup._AFTER_IMPORT)
        startup._AFTER_IMPORT.register("probed", lambda module: calls.append(module.VALUE))
        assert importlib.util.find_spec("probed") is not None and calls == []
        import probed
        importlib.reload(probed)  # already called: not again
        print(calls)
        """)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={"PATH": os.defpath}
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[1]"


def _run(tmp_path: Path, side: str, code: str, **config) -> tuple[list, dict]:
    """Run code under the bootstrap; what it printed last (JSON) and its trace's notes."""
    script = tmp_path / "checks.py"
    script.write_text(textwrap.dedent(code))
    spec = _spec(side, script, **config)
    proc = subprocess.run(
        command(spec),
        cwd=tmp_path,
        env=side_env(spec),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    trace = json.loads(next(tmp_path.glob(f"trace-{side}-*.json")).read_text())
    return json.loads(proc.stdout.strip().splitlines()[-1]), trace["notes"]


@pytest.mark.slow
def test_lightning_ddp_over_one_device_runs_as_one_device_in_the_original(tmp_path):
    pytest.importorskip("lightning")
    printed, notes = _run(
        tmp_path,
        ORIGINAL,
        """
        import json
        import lightning as L
        import pytorch_lightning as PL
        from lightning.pytorch.strategies import DDPStrategy

        def strategy(trainer_class, **kwargs):
            trainer = trainer_class(logger=False, enable_checkpointing=False, **kwargs)
            return type(trainer.strategy).__name__

        print(json.dumps([
            strategy(L.Trainer, accelerator="gpu", devices=1, strategy="ddp"),
            strategy(L.Trainer, accelerator="gpu", devices=1, strategy="ddp_spawn"),
            strategy(L.Trainer, accelerator="gpu", devices=1,
                     strategy=DDPStrategy(find_unused_parameters=True)),
            strategy(PL.Trainer, accelerator="gpu", devices=1, strategy="ddp"),
            strategy(L.Trainer, accelerator="cpu", devices=2, strategy="ddp"),  # two processes
            strategy(L.Trainer, accelerator="gpu", devices=1, strategy="auto"),
        ]))
        """,
    )
    assert printed == ["SingleDeviceStrategy"] * 4 + ["DDPStrategy", "SingleDeviceStrategy"]
    assert notes["framework:lightning-ddp-one-device"] == 4


LIGHTNING_BF16_TRUE = """
    import json, os
    from lightning.pytorch.plugins.precision.xla import XLAPrecision
    from lightning.fabric.plugins.precision.xla import XLAPrecision as FabricXLAPrecision

    XLAPrecision("bf16-true"), FabricXLAPrecision("16-true")
    print(json.dumps([os.environ.get("XLA_USE_BF16"), os.environ.get("XLA_USE_F16")]))
    """


@pytest.mark.xla
@pytest.mark.usefixtures("xla_available")
@pytest.mark.parametrize("keep_autocast", [False, True], ids=["fp32", "keep-autocast"])
def test_lightning_half_precision_storage_on_xla_is_off_unless_autocast_is_kept(
    tmp_path, keep_autocast
):
    pytest.importorskip("lightning")
    printed, notes = _run(tmp_path, MIGRATED, LIGHTNING_BF16_TRUE, keep_autocast=keep_autocast)
    if keep_autocast:
        assert printed == ["1", "1"] and notes["framework:lightning-xla-half-kept"] == 2
    else:
        assert printed == [None, None] and notes["framework:lightning-xla-half"] == 2
