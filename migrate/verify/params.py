"""Compare the final parameters of the two runs (needs torch: in this process if it has it)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from .runner import BOOTSTRAP_DIR, protocol

_DIFF_MODULE = BOOTSTRAP_DIR / "_tpu_migrate_verify" / "params_diff.py"


def compare_params(
    original: Path,
    migrated: Path,
    rtol: float,
    atol: float,
    python: str,
    noises: list[Path] = (),
    multiplier: float = 0.0,
) -> dict:
    """The bootstrap's params_diff result; raises RuntimeError when the files cannot be compared."""
    if importlib.util.find_spec("torch") is not None:
        return _load_diff_module().diff(
            str(original), str(migrated), rtol, atol, [str(n) for n in noises], multiplier
        )
    return compare_in_subprocess(original, migrated, rtol, atol, python, noises, multiplier)


def compare_in_subprocess(
    original: Path,
    migrated: Path,
    rtol: float,
    atol: float,
    python: str,
    noises: list[Path] = (),
    multiplier: float = 0.0,
) -> dict:
    """Same comparison with the interpreter that ran the script (this one may not have torch)."""
    proc = subprocess.run(
        [
            python,
            "-m",
            "_tpu_migrate_verify.params_diff",
            str(original),
            str(migrated),
            repr(rtol),
            repr(atol),
            *([repr(multiplier), *map(str, noises)] if noises else []),
        ],
        capture_output=True,
        text=True,
        env={**_without_verify_config(os.environ), "PYTHONPATH": str(BOOTSTRAP_DIR)},
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"comparing the parameters failed: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout)


def _load_diff_module():
    spec = importlib.util.spec_from_file_location("migrate.verify._params_diff", _DIFF_MODULE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def _without_verify_config(environ) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k != protocol.CONFIG_ENV}
