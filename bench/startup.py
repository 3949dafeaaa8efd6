"""Start-up time of the CLI: what a pre-commit hook or a quick `tpu-migrate rules` waits for.

    python bench/startup.py [--runs N]

Each figure is the median wall time of ``--runs`` fresh processes (after one run not counted),
measured around ``subprocess.run`` from this checkout (``python -m migrate``, the code of this
repository, whatever is installed):

* ``import libcst``: the floor every command that parses code pays, measured in the same rounds;
* ``import libcst.codemod`` and ``import codemods`` (every rule): the floor of a run that applies
  the rules. A rule is a libcst codemod, and ``libcst.codemod`` imports ``libcst.matchers``
  (about 450 generated dataclasses), so ``check`` pays both before it reads a file;
* ``--help``, ``rules``, ``explain TPU101``;
* ``check`` on the bundled example project (the one ``scripts/demo.sh`` migrates), cold (an
  empty result cache: ``$TPU_MIGRATE_CACHE_DIR`` points at a fresh directory each run) and
  warm (the same cache, filled by the run before).

The commands run in turns, one of each per round, so that a machine busy with something else
slows them alike; the load average is printed with them, and the last column divides each figure
by ``import libcst``'s. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO_PROJECT = ROOT / "fixtures" / "trainer_project" / "before"  # as in scripts/demo.sh


def commands(python: str) -> dict[str, list[str]]:
    cli = [python, "-m", "migrate"]
    return {
        "import libcst": [python, "-c", "import libcst"],
        "import libcst.codemod": [python, "-c", "import libcst.codemod"],
        "import codemods": [python, "-c", "import codemods"],
        "--help": [*cli, "--help"],
        "rules": [*cli, "rules"],
        "explain TPU101": [*cli, "explain", "TPU101"],
        "check (cold cache)": [*cli, "check", str(DEMO_PROJECT)],
        "check (warm cache)": [*cli, "check", str(DEMO_PROJECT)],
    }


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True)
    return time.perf_counter() - start, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="measured runs of each (default: 7)")
    parser.add_argument("--python", default=sys.executable, help="default: this interpreter")
    args = parser.parse_args()
    base_env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times: dict[str, list[float]] = {}
    codes: dict[str, set[int]] = {}
    with tempfile.TemporaryDirectory(prefix="tpu-migrate-startup-") as scratch:
        cold_cache, warm_cache = Path(scratch) / "cold", Path(scratch) / "warm"
        envs = {
            "check (cold cache)": {**base_env, "TPU_MIGRATE_CACHE_DIR": str(cold_cache)},
            "check (warm cache)": {**base_env, "TPU_MIGRATE_CACHE_DIR": str(warm_cache)},
        }
        to_run = commands(args.python)
        load_before = os.getloadavg()
        for round_number in range(args.runs + 1):  # round 0 warms up (and fills the warm cache)
            for name, argv in to_run.items():
                shutil.rmtree(cold_cache, ignore_errors=True)
                wall, code = run_once(argv, envs.get(name, base_env))
                if round_number:
                    times.setdefault(name, []).append(wall)
                    codes.setdefault(name, set()).add(code)
        load_after = os.getloadavg()
    floor = statistics.median(times["import libcst"])
    print(f"python {args.python}; {args.runs} runs each, median wall time")
    print(
        "load average (1 min) before/after: "
        f"{load_before[0]:.2f} / {load_after[0]:.2f} on {os.cpu_count()} CPUs"
    )
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print(
            "note: PYTHONDONTWRITEBYTECODE is set: a module with no .pyc yet compiles on every run"
        )
    print(f"{'':<22} {'median':>8} {'min':>8} {'max':>8}  {'x libcst':>8}  exit")
    for name, walls in times.items():
        median = statistics.median(walls)
        exits = ",".join(str(code) for code in sorted(codes[name]))
        print(
            f"{name:<22} {median:7.3f}s {min(walls):7.3f}s {max(walls):7.3f}s"
            f"  {median / floor:8.2f}  {exits}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
