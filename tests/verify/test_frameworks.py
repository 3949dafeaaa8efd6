"""The post-import hook the bootstrap hangs its patches on (startup._AfterImport)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from migrate.verify.runner import BOOTSTRAP_DIR


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
