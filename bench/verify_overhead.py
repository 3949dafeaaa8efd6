"""What `tpu-migrate verify` costs on real scripts: its wall time against the same processes run plainly.

For each case of a corpus laid out by its harness (``shared/corpus`` beside the project: its
``run.py`` and ``cases.py``, read where they are), this

1. lays the case out in a temporary folder and migrates a copy with `tpu-migrate apply`;
2. times the processes verify starts, each run plainly: the original on the CPU and again for
   each of verify's noise runs, with the case's CPU arguments (its accelerator path, which verify maps
   to the CPU, needs a GPU when run plainly), and the migrated script on XLA:CPU with the
   accelerator arguments;
3. times `tpu-migrate verify` with the same arguments and steps;

and prints verify's wall time over the sum of the plain runs' (the issue's bound is 1.5). The plain
runs go to the end of the script (or the case's progress bound); verify stops each run after
``--steps`` optimizer steps, so the ratio leans in verify's disfavour only by what it adds.

    .venv/bin/python bench/verify_overhead.py [--corpus ../shared/corpus] [--only NAME,...]
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from migrate.verify.compare import NOISE_RUNS  # noqa: E402  (the bench runs from a checkout)


def load_harness(corpus: Path):
    sys.path.insert(0, str(corpus))
    spec = importlib.util.spec_from_file_location("corpus_run", corpus / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(harness, case, corpus_files: Path, tool: list[str], python: str, work: Path) -> dict:
    workdir, migrated = work / "work", work / "migrated"
    harness.lay_out(case, corpus_files, workdir)
    shutil.copytree(workdir, migrated)
    harness.run_tool(tool, ["apply", "."], migrated)
    logs = work / "logs"
    plain: dict[str, float | None] = {}
    bounded = False
    # The original runs plainly with the case's CPU arguments: its accelerator path (what verify
    # runs, CUDA mapped to the CPU) cannot run plainly without a GPU. The migrated script runs
    # with the accelerator arguments, as under verify.
    noise_runs = [(f"noise-{i + 1}", workdir, False, case.args) for i in range(NOISE_RUNS)]
    for label, root, xla, args in (
        ("original", workdir, False, case.args),
        *noise_runs,
        ("migrated", migrated, True, case.gpu_args),
    ):
        env = harness.clean_env(case, root, xla=xla)
        result = harness.run_logged(
            [python, root / case.script, *args],
            root / case.run_dir,
            env,
            case.timeout,
            logs / f"{label}.log",
            case.progress,
            case.min_progress,
        )
        # A plain run stopped at the time limit took at least that long: the ratio is then an
        # upper bound ("<="). A plain run that failed gives no figure.
        timed_out = not result["ok"] and str(result.get("reason", "")).startswith("timeout")
        plain[label] = result["seconds"] if result["ok"] or timed_out else None
        bounded = bounded or timed_out
    started = time.time()
    args = [
        "verify",
        workdir / case.script,
        "--steps",
        case.steps,
        "--cwd",
        workdir / case.run_dir,
        "--timeout",
        case.timeout,
        "--json",
        logs / "verify.json",
        "--",
        *case.gpu_args,
    ]
    code, _, _ = harness.run_tool(
        tool,
        args,
        workdir / case.run_dir,
        env=harness.clean_env(case, workdir),
        timeout=3 * case.timeout + 300,
    )
    seconds = time.time() - started
    total = sum(v for v in plain.values() if v) if all(plain.values()) else None
    noise = [plain.pop(label) for label, *_ in noise_runs]
    return {
        "case": case.name,
        **plain,
        "noise": round(sum(noise), 1) if all(noise) else None,
        "verify": round(seconds, 1),
        "exit": code,
        "ratio": (("<=" if bounded else "") + f"{seconds / total:.2f}") if total else None,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--only", default="", help="comma-separated case names")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--tool", default=str(Path(sys.executable).with_name("tpu-migrate")))
    options = parser.parse_args(argv)
    harness = load_harness(options.corpus.resolve())
    cases = harness.cases_mod.CASES
    if options.only:
        names = set(options.only.split(","))
        cases = [case for case in cases if case.name in names]
    print(
        f"{'case':<22}{'original s':>11}{'noise s':>9}{'migrated s':>11}{'verify s':>10}"
        f"{'exit':>6}{'ratio':>7}"
    )
    for case in cases:
        with tempfile.TemporaryDirectory(prefix="tpu-migrate-overhead-") as work:
            row = measure(
                harness,
                case,
                options.corpus.resolve() / "files",
                [options.tool],
                options.python,
                Path(work),
            )
        cells = [row.get(k) for k in ("original", "noise", "migrated", "verify", "exit", "ratio")]
        print(
            f"{row['case']:<22}"
            + "".join(
                f"{('-' if v is None else v)!s:>{w}}" for v, w in zip(cells, (11, 9, 11, 10, 6, 7))
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
