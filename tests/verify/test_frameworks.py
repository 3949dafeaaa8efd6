"""The framework paths of both runs: which path each run takes (runner.side_env) and the
post-import hook the framework patches hang on (startup._AfterImport)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from pathlib import Path

from migrate.verify.runner import BOOTSTRAP_DIR, MIGRATED, ORIGINAL, SideSpec, protocol, side_env


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
