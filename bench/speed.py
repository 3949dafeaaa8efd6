"""Speed of the full pipeline against the natural baseline, on real code nobody here wrote.

    PYTHONPATH=. python bench/speed.py [--tree DIR] [--jobs N] [--fractions 0.25,0.5,1]

The tree (default: the installed torch package's .py files) is copied to a temporary directory, so
nothing real is touched. For each fraction (every 4th file, every 2nd, all: the same mix of files)
it measures, each in a fresh process:

* baseline: ``python -m libcst.tool codemod -x --no-format --include-generated`` with the no-op
  codemod in ``bench/noop_codemod.py`` and the same number of jobs (read, parse, one pass, codegen);
* tpu-migrate: ``apply --no-cache`` on another copy (every rule, writes what changes).

and prints wall time, files/s, MB/s and the peak RSS of the largest process (``ru_maxrss`` of the
children, so the worker processes count). On the last (by default whole) tree it then re-checks the migrated copy
(``diff``: must report nothing, i.e. the migration is idempotent), prints the sweep counts, and runs
``check`` twice with a fresh cache to print the cached re-run ratio (with ``--fractions`` not
ending at 1, on the last part measured).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def torch_tree() -> Path:
    import torch

    return Path(torch.__file__).parent


def python_files(tree: Path) -> list[Path]:
    return sorted(p for p in tree.rglob("*.py") if p.is_file() and not p.is_symlink())


def copy_files(files: list[Path], tree: Path, destination: Path) -> int:
    size = 0
    for path in files:
        target = destination / path.relative_to(tree)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        size += target.stat().st_size
    return size


def measure(argv: list[str], env: dict | None = None) -> dict:
    """Run ``argv`` in a fresh measuring process: wall time, exit code, peak RSS, output."""
    probe = (
        "import json, resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "wall = time.perf_counter() - t\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(json.dumps({'wall': wall, 'rc': p.returncode, 'rss_kb': rss,"
        " 'stdout': p.stdout, 'stderr': p.stderr}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        check=True,
    )
    return json.loads(proc.stdout)


def baseline(directory: Path, jobs: int) -> dict:
    return measure(
        [
            sys.executable,
            "-m",
            "libcst.tool",
            "codemod",
            "-x",
            f"--jobs={jobs}",
            "--no-format",
            "--include-generated",
            "--hide-progress",
            "bench.noop_codemod.NoOp",
            str(directory),
        ]
    )


def tpu_migrate(command: str, directory: Path, jobs: int, *extra: str, env=None) -> dict:
    argv = [sys.executable, "-m", "migrate", command, "-j", str(jobs), *extra, str(directory)]
    return measure(argv, env)


def row(name: str, run: dict, files: int, size: int) -> str:
    wall = run["wall"]
    return (
        f"  {name:<12} {wall:8.1f} s  {files / wall:8.1f} files/s  {size / 1e6 / wall:6.2f} MB/s"
        f"  peak {run['rss_kb'] / 1024:6.0f} MB  (exit {run['rc']})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=None, help="default: the torch package")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--fractions", default="0.25,0.5,1")
    args = parser.parse_args()
    tree = (args.tree or torch_tree()).resolve()
    everything = python_files(tree)
    print(f"tree {tree}: {len(everything)} .py files; jobs {args.jobs}")
    with tempfile.TemporaryDirectory(prefix="tpu-migrate-bench-") as scratch:
        scratch = Path(scratch)
        for fraction in [float(f) for f in args.fractions.split(",")]:
            step = round(1 / fraction)
            files = everything[::step]
            base_dir, ours_dir = scratch / f"base-{step}", scratch / f"ours-{step}"
            size = copy_files(files, tree, base_dir)
            copy_files(files, tree, ours_dir)
            print(f"\n1/{step} of the tree: {len(files)} files, {size / 1e6:.1f} MB")
            base = baseline(base_dir, args.jobs)
            ours = tpu_migrate("apply", ours_dir, args.jobs, "--no-cache")
            print(row("libcst no-op", base, len(files), size))
            print(row("tpu-migrate", ours, len(files), size))
            print(f"  ratio tpu-migrate / baseline wall time: {ours['wall'] / base['wall']:.2f}")
        # sweep and cache figures: on the last part measured (the whole tree by default)
        report_sweep(ours_dir, tree, files, args.jobs, scratch)
    return 0


def report_sweep(migrated: Path, tree: Path, files: list[Path], jobs: int, scratch: Path) -> None:
    again = tpu_migrate("diff", migrated, jobs, "--no-cache")
    errors = [line for line in again["stderr"].splitlines() if ": " in line and ":" in line[:200]]
    print(f"  idempotent (second run changes nothing): {again['stdout'] == ''}")
    changed_again = [line[4:] for line in again["stdout"].splitlines() if line.startswith("+++ ")]
    for name in changed_again[:10]:  # what a failure needs to be diagnosed
        print("    changed again:", name)
    pristine = scratch / "pristine"
    copy_files(files, tree, pristine)
    env = {"TPU_MIGRATE_CACHE_DIR": str(scratch / "cache")}
    cold = tpu_migrate("check", pristine, jobs, "--format", "json", env=env)
    warm = tpu_migrate("check", pristine, jobs, "--format", "json", env=env)
    summary = json.loads(cold["stdout"])["summary"]
    print(
        f"  sweep: {summary['files_scanned']} files, {summary['files_changed']} changed, "
        f"{sum(summary['findings'].values())} findings, {summary['files_failed']} errors"
    )
    internal = [line for line in cold["stdout"].splitlines() if "internal error" in line]
    print(f"  internal errors in rules: {len(internal)}; other problems on re-run: {len(errors)}")
    for line in internal[:10]:
        print("   ", line.strip())
    print(
        f"  cache: cold check {cold['wall']:.1f} s, warm re-check {warm['wall']:.1f} s, "
        f"ratio {warm['wall'] / cold['wall']:.2f}"
    )


if __name__ == "__main__":
    sys.exit(main())
