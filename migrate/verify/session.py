"""One verification: prepare the migrated script, run both sides, compare, explain."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from .compare import (
    FAILED,
    NOISE_RUNS,
    NOT_ON_XLA,
    NUDGE,
    margin,
    Hygiene,
    StepRow,
    Tolerance,
    Verdict,
    compare_losses,
    decide,
    strict_failures,
    summarize_hygiene,
    loose_bounds,
    untrained,
)
from .notes import failure_hints, run_notes
from .params import compare_params
from ..discover import discover
from ..notebook import Notebook
from ..source import NOTEBOOK_SUFFIX, SourceError
from .project import (
    MigratedCopy,
    adjustments_for_given_migration,
    changed_files_text,
    migrate_copy,
    numerics_notes,
    rules_applied_to,
)
from .shadow import Shadow, project_root
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
    root: Path | None = None  # the user's project root (default: see shadow.project_root)
    cwd: Path | None = None
    timeout: float = 300.0
    keep_dropout: bool = False  # True: dropout on, masks aligned (rng_align.py)
    keep_autocast: bool = False
    align_rng: bool = True  # migrated draws on XLA from the CPU generator
    original_cpu_path: bool = False
    strict: bool = False
    python: str = sys.executable
    keep_temp: bool = False
    json_out: str | None = None  # where the command writes the JSON result ("-": stdout)
    fixed_tolerance: bool = False  # no noise run: the bounds are rtol/atol alone
    noise_runs: int = NOISE_RUNS  # noise runs measuring the bounds (each with nudges of its own)

    @property
    def tolerance(self) -> Tolerance:
        tolerance = Tolerance.default(self.keep_autocast, self.rtol, self.atol)
        return Tolerance(tolerance.rtol, tolerance.atol, 0.0) if self.fixed_tolerance else tolerance


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
    noises: list[SideRun] = field(default_factory=list)  # the original, nudged (compare.NUDGE)
    margin: dict | None = None  # the worst difference over its bound, and where
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
    root = options.root.resolve() if options.root is not None else None
    if root is not None and not root.is_dir():
        raise UsageError(f"--root {options.root}: not a directory")
    if root is not None and not script.is_relative_to(root):
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
    if options.noise_runs < 1:
        raise UsageError("--noise-runs must be at least 1 (--fixed-tolerance runs none)")
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
    layout = _layout(options, report, temp)
    report.migrated_script = layout.migrated_script
    notebook = _NotebookRuns.of(options, layout, report)
    original_script = notebook.script(layout.original) if notebook else options.script
    migrated_script = notebook.migrated_script if notebook else layout.migrated_script
    specs = [
        _spec(
            options,
            ORIGINAL,
            layout.original.path(original_script) if not notebook else original_script,
            layout,
            layout.original,
            temp,
            notebook.adjustments(original_script) if notebook else layout.adjustments,
        ),
        _spec(options, MIGRATED, migrated_script, layout, layout.migrated, temp),
    ]
    for index in range(0 if options.fixed_tolerance else options.noise_runs):
        name = f"noise-{index + 1}"
        noise = _run_shadow(options, temp, name)
        noise_script = notebook.script(noise) if notebook else noise.path(options.script)
        spec = _spec(
            options,
            ORIGINAL,
            noise_script,
            layout,
            noise,
            temp,
            notebook.adjustments(noise_script) if notebook else layout.adjustments,
            trace=name,
            perturb=NUDGE,
            noise_index=index,
        )
        spec.label, spec.essential = name, False
        specs.append(spec)
    runs = run_sides(specs, options.timeout)
    report.original, report.migrated = runs[:2]
    report.noises = runs[2:]
    if _migrate_what_the_run_imported(options, report, layout):
        again = _spec(
            options,
            MIGRATED,
            migrated_script,
            layout,
            layout.migrated,
            temp,
            trace="migrated-again",
        )
        (report.migrated,) = run_sides([again], options.timeout)
    report.notes.extend(run_notes(options, report.original, report.migrated))
    for run in sorted((report.original, report.migrated), key=lambda run: run.cancelled):
        if run.failure:
            report.failure = Failure(run.spec.side, run.failure, run.stderr_tail())
            report.verdict = Verdict(FAILED, f"the {run.spec.side} run failed: {run.failure}")
            report.notes.extend(failure_hints(run, options))
            return
    original_trace, migrated_trace = report.original.trace, report.migrated.trace
    off_cpu = original_on_xla(original_trace)
    if off_cpu:
        report.failure = Failure(ORIGINAL, off_cpu)
        report.verdict = Verdict(FAILED, f"the original run failed: {off_cpu}")
        return
    noise_runs = _usable_noise(options, report)
    report.rows = compare_losses(
        original_trace["steps"],
        migrated_trace["steps"],
        report.tolerance,
        [run.trace["steps"] for run in noise_runs],
    )
    if migrated_trace.get("hygiene"):
        report.hygiene = summarize_hygiene(migrated_trace["hygiene"])
        if not report.hygiene.steady_steps:
            report.notes.append(
                f"hygiene: {len(report.rows)} step(s) are too few to tell warm-up from steady "
                f"state (use --steps {report.hygiene.warmup_steps + 2} or more); per-step "
                "numbers are whole-run averages"
            )
    off_xla = not_on_xla(migrated_trace, report.hygiene)
    if off_xla:
        report.verdict = Verdict(NOT_ON_XLA, off_xla)
        return
    try:
        report.params = compare_params(
            report.original.params_path(),
            report.migrated.params_path(),
            report.tolerance.rtol,
            report.tolerance.atol,
            options.python,
            [run.params_path() for run in noise_runs if run.params_path()],
            report.tolerance.multiplier,
        )
    except (OSError, RuntimeError) as exc:
        report.failure = Failure("verify", f"could not compare the parameters: {exc}")
        report.verdict = Verdict(FAILED, report.failure.message)
        return
    report.margin = margin(report.rows, report.params)
    strict = strict_failures(report.hygiene) if options.strict else []
    verdict = decide(report.rows, report.params, report.tolerance, strict)
    verdict, untrained_notes = untrained(verdict, original_trace, report.rows)
    report.verdict, loose_notes = loose_bounds(verdict, report.rows, report.params)
    report.notes += untrained_notes + loose_notes


def _usable_noise(options: Options, report: Report) -> list[SideRun]:
    """The noise runs that can measure the bounds; a note says which could not, and why."""
    if options.fixed_tolerance:
        report.notes.append(
            f"fixed tolerance (--fixed-tolerance): rtol {report.tolerance.rtol:g}, "
            f"atol {report.tolerance.atol:g}, no noise run"
        )
        return []
    wanted = len(report.original.trace["steps"])
    usable = []
    for run in report.noises:
        if run.failure is None and run.trace is not None and len(run.trace["steps"]) >= wanted:
            usable.append(run)
            continue
        why = run.failure or "it did not reach every step"
        report.notes.append(f"the {run.spec.name} run could not measure the bounds ({why})")
    if not usable:
        report.notes.append(
            f"no noise run measured the bounds: rtol {report.tolerance.rtol:g} and atol "
            f"{report.tolerance.atol:g} alone"
        )
        report.tolerance = replace(report.tolerance, multiplier=0.0)
        return []
    report.notes.append(
        f"bounds measured by {_runs_words(len(usable))} (the original with its parameters nudged "
        f"by {NUDGE:.1e} relative at each step, each run in its own directions): atol "
        f"{report.tolerance.atol:g} + rtol {report.tolerance.rtol:g} x |value| + "
        f"{report.tolerance.multiplier:g} x the largest drift"
    )
    return usable


def _runs_words(count: int) -> str:
    return "a noise run" if count == 1 else f"{count} noise runs"


def original_on_xla(trace: dict) -> str | None:
    """Why the original run cannot be the reference: it trained on XLA, not plain torch on the CPU
    (None when it did not). The comparison would then be XLA against XLA and prove nothing."""
    if "xla" not in (trace.get("param_devices") or []):
        return None
    return (
        "it trained on XLA, not plain torch on the CPU (its optimizer holds xla tensors), so the "
        "comparison would be XLA against XLA (is the script already migrated, or does one of its "
        "libraries pick XLA by itself whenever torch_xla imports?)"
    )


def not_on_xla(trace: dict, hygiene) -> str | None:
    """Why the migrated run's training did not run on XLA (None when it did)."""
    devices = trace.get("param_devices") or []
    where = trace.get("optimizer_created_at")
    if devices and "xla" not in devices:
        holder = f"the optimizer built at {where}" if where else "the optimizer"
        return f"{holder} holds {', '.join(devices)} tensors, not XLA ones: {_device_words(trace)}"
    if not trace.get("torch_xla_used"):
        return f"the migrated run never started the XLA runtime: {_device_words(trace)}"
    if hygiene is not None and hygiene.compilations == 0:
        return f"the migrated run's training steps executed no XLA graph: {_device_words(trace)}"
    return None


def _device_words(trace: dict) -> str:
    moves = trace.get("device_moves") or []
    if moves:
        first = moves[0]
        return f"the model went to {first['device']} at {first['where']}"
    return "no module was moved to the XLA device (is torch_xla.device() used?)"


@dataclass
class _NotebookRuns:
    """A notebook is run as the program its code cells make, written as a script beside it in
    each run's shadow (its folder is a real folder there): line for line the program the rules
    saw, with each IPython line a ``pass``."""

    user_notebook: Path
    original: str  # the original notebook's runnable program
    migrated_script: Path  # the migrated notebook's, written in the migrated shadow
    user_adjustments: list[dict]  # what the original run repeats, at the notebook's lines

    @classmethod
    def of(cls, options: Options, layout: "Layout", report: Report) -> "_NotebookRuns | None":
        if options.script.suffix != NOTEBOOK_SUFFIX:
            return None
        try:
            original = Notebook.parse(options.script.read_bytes())
            migrated_script = layout.migrated_script
            if migrated_script.suffix == NOTEBOOK_SUFFIX:  # (a --migrated script runs as it is)
                migrated = Notebook.parse(migrated_script.read_bytes())
                migrated_script = _runnable_path(migrated_script)
                migrated_script.write_text(migrated.runnable(), encoding="utf-8")
        except SourceError as exc:
            raise UsageError(f"{options.script}: {exc}") from exc
        report.notes.append(
            "notebook: its code cells ran in order as one program on each side"
            + (f"; left out: {'; '.join(original.skipped())}" if original.skipped() else "")
        )
        return cls(options.script, original.runnable(), migrated_script, layout.adjustments)

    def script(self, shadow: Shadow) -> Path:
        """The original program, written in ``shadow``; its path there."""
        path = _runnable_path(shadow.path(self.user_notebook))
        path.write_text(self.original, encoding="utf-8")
        return path

    def adjustments(self, script: Path) -> list[dict]:
        """What the original run repeats, placed in the runnable program (same lines)."""
        notebook = os.path.realpath(self.user_notebook)
        return [
            {**a, "path": str(script)} if os.path.realpath(a["path"]) == notebook else a
            for a in self.user_adjustments
        ]


def _runnable_path(notebook: Path) -> Path:
    return notebook.with_name(f".{notebook.stem}.tpu-migrate-run.py")


@dataclass
class Layout:
    """Where the runs happen: one shadow of the user's tree per run (see shadow.py)."""

    original: Shadow
    migrated: Shadow
    migrated_script: Path  # in the migrated shadow
    protected: list[Path]  # the user's folders the shadows stand for
    copy: MigratedCopy | None = None  # None when the migrated script was given
    adjustments: list[dict] = field(default_factory=list)


def _layout(options: Options, report: Report, temp: Path) -> Layout:
    """Build the shadows: the original's code linked, the migrated side's code migrated."""
    user_path = _user_pythonpath()
    if options.root is not None:
        root, notes = options.root, [f"project root: {options.root} (--root)"]
    else:
        root, notes = project_root(options.script, options.cwd, user_path)
    report.notes.extend(notes)
    original, migrated = _run_shadow(options, temp, ORIGINAL), _run_shadow(options, temp, MIGRATED)
    if options.migrated is not None:
        report.notes.append(f"migrated script given: {options.migrated}")
        adjustments, notes, missing = adjustments_for_given_migration(
            options.script, options.migrated
        )
        applied = [code for code in rules_applied_to(options.script) if code not in missing]
        report.notes.extend(numerics_notes(applied))
        report.notes.extend(notes)
        migrated.unshare(options.migrated.parent)
        protected = [root] + (
            [] if options.migrated.is_relative_to(root) else [options.migrated.parent]
        )
        return Layout(
            original,
            migrated,
            migrated.path(options.migrated),
            protected,
            adjustments=adjustments,
        )
    copy = migrate_copy(root, options.script, migrated)
    report.notes.extend(copy.notes(root))
    return Layout(original, migrated, copy.script, [root], copy, copy.adjustments)


def _run_shadow(options: Options, temp: Path, name: str) -> Shadow:
    """A run's shadow, with the working directory and the script's folder real from the start."""
    shadow = Shadow(temp / f"shadow-{name}")
    shadow.unshare(options.cwd)
    shadow.unshare(options.script.parent)
    return shadow


def _user_pythonpath() -> list[Path]:
    return [Path(p).resolve() for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def _migrate_what_the_run_imported(options: Options, report: Report, layout: Layout) -> bool:
    """Migrate the local modules the migrated run imported from outside the project root.

    A module reached through a ``sys.path`` edit or a PYTHONPATH entry outside the root was
    imported unmigrated; its package is migrated into the shadow too, and True asks for the
    migrated run again.
    """
    if layout.copy is None or report.migrated.failure and not report.migrated.imports:
        return False
    outside = [
        module for module in report.migrated.imports if module["real"] not in layout.copy.migrated
    ]
    if not outside:
        return False
    trees: dict[Path, tuple[list[str], list[Path]]] = {}
    for module in outside:
        top = _package_of(module)
        if top not in trees:
            trees[top] = ([], discover([top]).files if top.is_dir() else [top])
        trees[top][0].append(module["name"])
    for top, (names, files) in sorted(trees.items()):
        base = top if top.is_dir() else top.parent
        copy = migrate_copy(base, options.script, layout.migrated, files=files)
        layout.copy.migrated |= copy.migrated
        layout.copy.adjustments += copy.adjustments
        layout.protected.append(top)
        report.notes.append(
            f"the migrated run imported {', '.join(sorted(names))} from {base}, outside the "
            f"project root: migrated {changed_files_text(copy.changed) or 'it (no rule changed it)'} "
            "into the shadow too and ran again"
        )
    return True


def _package_of(module: dict) -> Path:
    """The folder of a module's top-level package, or the module file itself."""
    path = Path(module["real"])
    depth = module["name"].count(".") + (1 if path.name == "__init__.py" else 0)
    top = path.parent if depth else path
    for _ in range(max(depth - 1, 0)):
        top = top.parent
    return top


def _spec(
    options: Options,
    side: str,
    script: Path,
    layout: Layout,
    shadow: Shadow,
    temp: Path,
    adjustments: list[dict] = (),
    trace: str | None = None,
    perturb: float = 0.0,
    noise_index: int = 0,
) -> SideSpec:
    config = protocol.Config(
        side=side,
        trace_dir=str(temp / f"trace-{trace or side}"),
        perturb=perturb,
        noise_index=noise_index,
        steps=options.steps,
        seed=options.seed,
        keep_dropout=options.keep_dropout,
        keep_autocast=options.keep_autocast,
        align_rng=options.align_rng,
        map_cuda=not options.original_cpu_path,
        adjustments=tuple(adjustments),
        shadow=str(shadow.base),
        protected=tuple(str(p) for p in layout.protected),
        remap_imports=side == MIGRATED,
    )
    pythonpath = [
        str(shadow.path(p)) if any(p.is_relative_to(root) for root in layout.protected) else str(p)
        for p in _user_pythonpath()
    ]
    return SideSpec(
        side,
        script,
        list(options.script_args),
        shadow.path(options.cwd),
        options.python,
        config,
        pythonpath,
    )
