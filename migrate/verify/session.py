"""One verification: prepare the migrated script, run both sides, compare, explain."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .compare import (
    FAILED,
    WARMUP_STEPS,
    Hygiene,
    StepRow,
    Tolerance,
    Verdict,
    compare_losses,
    decide,
    strict_failures,
    summarize_hygiene,
)
from .notes import failure_hints, run_notes
from .params import compare_params
from .project import (
    adjustments_for_given_migration,
    migrate_copy,
    numerics_notes,
    rules_applied_to,
)
from .runner import MIGRATED, ORIGINAL, SideRun, SideSpec, protocol, run_sides


class UsageError(Exception):
    """A problem with the command line (exit 3)."""


@dataclass
class Options:
    script: Path
    script_args: list[str] = field(default_factory=list)
    steps: int = 5
    seed: int = 0
    rtol: float | None = None
    atol: float | None = None
    migrated: Path | None = None
    root: Path | None = None
    cwd: Path | None = None
    timeout: float = 300.0
    keep_dropout: bool = False
    keep_autocast: bool = False
    original_cpu_path: bool = False
    strict: bool = False
    python: str = sys.executable
    keep_temp: bool = False
    json_out: str | None = None  # where the command writes the JSON result ("-": stdout)

    @property
    def tolerance(self) -> Tolerance:
        return Tolerance.default(self.keep_autocast, self.rtol, self.atol)


@dataclass
class Failure:
    side: str  # "original", "migrated" or "verify" (tpu-migrate itself)
    message: str
    stderr_tail: str = ""


@dataclass
class Report:
    options: Options
    tolerance: Tolerance
    migrated_script: Path | None = None
    original: SideRun | None = None
    migrated: SideRun | None = None
    rows: list[StepRow] = field(default_factory=list)
    params: dict | None = None
    hygiene: Hygiene | None = None
    verdict: Verdict | None = None
    failure: Failure | None = None
    notes: list[str] = field(default_factory=list)
    temp_dir: Path | None = None  # kept for inspection with --keep-temp


def check_options(options: Options) -> Options:
    """Resolve paths and reject what cannot work; raises UsageError."""
    script = options.script
    if not script.is_file():
        raise UsageError(f"{script}: no such file")
    script = script.resolve()
    root = (options.root or script.parent).resolve()
    if options.root is not None and not root.is_dir():
        raise UsageError(f"--root {options.root}: not a directory")
    if not script.is_relative_to(root):
        raise UsageError(f"{script} is not inside --root {root}")
    migrated = options.migrated
    if migrated is not None:
        if not migrated.is_file():
            raise UsageError(f"--migrated {migrated}: no such file")
        migrated = migrated.resolve()
    cwd = (options.cwd or Path.cwd()).resolve()
    if not cwd.is_dir():
        raise UsageError(f"--cwd {options.cwd}: not a directory")
    if options.steps < 1:
        raise UsageError("--steps must be at least 1")
    if options.timeout <= 0:
        raise UsageError("--timeout must be positive")
    if (options.rtol is not None and options.rtol < 0) or (
        options.atol is not None and options.atol < 0
    ):
        raise UsageError("--rtol and --atol must not be negative")
    if shutil.which(options.python) is None and not Path(options.python).is_file():
        raise UsageError(f"--python {options.python}: not found")
    return Options(
        **{**options.__dict__, "script": script, "root": root, "migrated": migrated, "cwd": cwd}
    )


def verify(options: Options) -> Report:
    options = check_options(options)
    report = Report(options, options.tolerance)
    temp = Path(tempfile.mkdtemp(prefix="tpu-migrate-verify-"))
    try:
        _run(options, report, temp)
    finally:
        if options.keep_temp:
            report.temp_dir = temp
        else:
            shutil.rmtree(temp, ignore_errors=True)
    return report


def _run(options: Options, report: Report, temp: Path) -> None:
    migrated_script, migrated_cwd, pythonpath, adjustments = _migrated_side(options, report, temp)
    report.migrated_script = migrated_script
    user_path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    specs = [
        _spec(options, ORIGINAL, options.script, options.cwd, user_path, temp, adjustments),
        _spec(options, MIGRATED, migrated_script, migrated_cwd, pythonpath or user_path, temp),
    ]
    report.original, report.migrated = run_sides(specs, options.timeout)
    report.notes.extend(run_notes(options, report.original, report.migrated))
    for run in sorted((report.original, report.migrated), key=lambda run: run.cancelled):
        if run.failure:
            report.failure = Failure(run.spec.side, run.failure, run.stderr_tail())
            report.verdict = Verdict(FAILED, f"the {run.spec.side} run failed: {run.failure}")
            report.notes.extend(failure_hints(run, options))
            return
    original_trace, migrated_trace = report.original.trace, report.migrated.trace
    report.rows = compare_losses(original_trace["steps"], migrated_trace["steps"], report.tolerance)
    if migrated_trace.get("hygiene"):
        report.hygiene = summarize_hygiene(migrated_trace["hygiene"])
        if not report.hygiene.steady_steps:
            report.notes.append(
                f"hygiene: {len(report.rows)} step(s) are too few to tell warm-up from steady "
                f"state (use --steps {WARMUP_STEPS + 2} or more); per-step numbers are "
                "whole-run averages"
            )
    try:
        report.params = compare_params(
            report.original.params_path(),
            report.migrated.params_path(),
            report.tolerance.rtol,
            report.tolerance.atol,
            options.python,
        )
    except (OSError, RuntimeError) as exc:
        report.failure = Failure("verify", f"could not compare the parameters: {exc}")
        report.verdict = Verdict(FAILED, report.failure.message)
        return
    strict = strict_failures(report.hygiene) if options.strict else []
    report.verdict = decide(report.rows, report.params, report.tolerance, strict)


def _migrated_side(
    options: Options, report: Report, temp: Path
) -> tuple[Path, Path, list[str], list[dict]]:
    """The migrated script, its working directory, PYTHONPATH entries pointing into the copy, and
    the rules' changes of behaviour the original run repeats."""
    if options.migrated is not None:
        report.notes.append(f"migrated script given: {options.migrated}")
        adjustments, notes, missing = adjustments_for_given_migration(
            options.script, options.migrated
        )
        applied = [code for code in rules_applied_to(options.script) if code not in missing]
        report.notes.extend(numerics_notes(applied))
        report.notes.extend(notes)
        return options.migrated, options.cwd, [], adjustments
    copy = migrate_copy(options.root, options.script, temp / "project")
    report.notes.extend(copy.notes(options.root))

    def into_copy(path: Path) -> Path:
        return (
            copy.root / path.relative_to(options.root)
            if path.is_relative_to(options.root)
            else path
        )

    pythonpath = [
        str(into_copy(Path(p).resolve()))
        for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if p
    ]
    return copy.script, into_copy(options.cwd), pythonpath, copy.adjustments


def _spec(
    options: Options,
    side: str,
    script: Path,
    cwd: Path,
    pythonpath: list[str],
    temp: Path,
    adjustments: list[dict] = (),
) -> SideSpec:
    config = protocol.Config(
        side=side,
        trace_dir=str(temp / f"trace-{side}"),
        steps=options.steps,
        seed=options.seed,
        keep_dropout=options.keep_dropout,
        keep_autocast=options.keep_autocast,
        map_cuda=not options.original_cpu_path,
        adjustments=tuple(adjustments),
    )
    return SideSpec(
        side, script, list(options.script_args), cwd, options.python, config, pythonpath
    )
