"""Tolerances, the loss table, the TPU hygiene summary and the verdict."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

EQUIVALENT, DIFFERENT, FAILED = "equivalent", "different", "failed"

# Measured XLA:CPU vs CPU drift: <= 2.1e-7 (MLP), 1.1e-6 (CNN + BatchNorm); bf16 autocast 3.5e-3.
FP32_RTOL, FP32_ATOL = 1e-5, 1e-6
AUTOCAST_RTOL = 2e-2

# The first step compiles an extra graph (optimizer state is created), the second the steady one.
WARMUP_STEPS = 2


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float

    @classmethod
    def default(
        cls, keep_autocast: bool, rtol: float | None = None, atol: float | None = None
    ) -> "Tolerance":
        return cls(
            rtol if rtol is not None else (AUTOCAST_RTOL if keep_autocast else FP32_RTOL),
            atol if atol is not None else FP32_ATOL,
        )

    def close(self, reference: float | None, value: float | None) -> bool:
        if reference is None or value is None:
            return reference is None and value is None
        if math.isnan(reference) or math.isnan(value):
            return math.isnan(reference) and math.isnan(value)
        if math.isinf(reference) or math.isinf(value):
            return reference == value
        return abs(reference - value) <= self.atol + self.rtol * abs(reference)


@dataclass
class StepRow:
    step: int
    original: float | None
    migrated: float | None
    rel_diff: float | None
    ok: bool
    reached_by: str = "both"  # or the one run that reached this step


def relative_difference(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or math.isnan(a) or math.isnan(b):
        return None
    if a == b:
        return 0.0
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if math.isfinite(scale) else math.inf


def compare_losses(
    original: list[dict], migrated: list[dict], tolerance: Tolerance
) -> list[StepRow]:
    """One row per step either run recorded; a step only one run reached does not match."""
    rows = []
    for index in range(max(len(original), len(migrated))):
        a = original[index]["loss"] if index < len(original) else None
        b = migrated[index]["loss"] if index < len(migrated) else None
        reached_by = (
            "both"
            if index < min(len(original), len(migrated))
            else ("original" if index < len(original) else "migrated")
        )
        ok = reached_by == "both" and tolerance.close(a, b)
        rows.append(StepRow(index + 1, a, b, relative_difference(a, b), ok, reached_by))
    return rows


@dataclass
class Hygiene:
    """How TPU-friendly the migrated loop is, from torch_xla.debug.metrics (see idioms doc section 5)."""

    compilations: int
    compilations_after_warmup: int
    executions_per_step: float
    host_transfers_per_step: float
    fallback_ops: list[str]
    mid_step_transfers: int  # steady-state steps whose graph a device->host read cut in two
    steady_steps: int  # steps measured after warm-up; 0 when the run was too short to tell
    per_step: list[dict] = field(default_factory=list)  # what each step added

    def to_json(self) -> dict:
        return asdict(self)


_ZERO = {"compilations": 0, "executions": 0, "host_transfers": 0, "scalar_reads": 0}
_KEYS = tuple(_ZERO)


def summarize_hygiene(recorded: dict) -> Hygiene:
    """Counts are cumulative snapshots taken at each optimizer step (after xm.wait_device_ops()).

    The interval between two snapshots holds one step boundary and the next step's work, so a
    healthy loop adds 1 execution, 0 compilations and no transfer per interval once the graphs of
    the first WARMUP_STEPS steps exist (they are all compiled by the snapshot of step WARMUP_STEPS+1).
    """
    snapshots = [s or _ZERO for s in recorded.get("per_step") or []]
    per_step, previous = [], _ZERO
    for index, snapshot in enumerate(snapshots):
        per_step.append({"step": index + 1, **{k: snapshot[k] - previous[k] for k in _KEYS}})
        previous = snapshot
    last = snapshots[-1] if snapshots else _ZERO
    steady = per_step[WARMUP_STEPS + 1 :]
    if steady:
        base = snapshots[WARMUP_STEPS]
        after_warmup = last["compilations"] - base["compilations"]
        count = len(steady)
    else:  # too short for a steady state: whole-run averages, no recompile verdict
        base, after_warmup, count = _ZERO, 0, max(len(snapshots), 1)
    return Hygiene(
        compilations=last["compilations"],
        compilations_after_warmup=after_warmup,
        executions_per_step=(last["executions"] - base["executions"]) / count,
        host_transfers_per_step=(last["host_transfers"] - base["host_transfers"]) / count,
        fallback_ops=list(recorded.get("fallback_ops") or []),
        mid_step_transfers=sum(
            1 for s in steady if s["executions"] > 1 and s["host_transfers"] > 0
        ),
        steady_steps=len(steady),
        per_step=per_step,
    )


def strict_failures(hygiene: Hygiene | None) -> list[str]:
    if hygiene is None:
        return []
    failures = []
    if hygiene.compilations_after_warmup:
        failures.append(
            f"{hygiene.compilations_after_warmup} graph compilation(s) after warm-up (dynamic shapes?)"
        )
    if hygiene.mid_step_transfers:
        failures.append(
            f"a device->host transfer cut the step graph in {hygiene.mid_step_transfers} steady-state "
            "step(s) (.item()/.cpu()/print of a tensor inside the step?)"
        )
    return failures


@dataclass
class Verdict:
    verdict: str
    reason: str
    first_diverging_step: int | None = None
    strict_failures: list[str] = field(default_factory=list)


def decide(rows: list[StepRow], params: dict, tolerance: Tolerance, strict: list[str]) -> Verdict:
    """The verdict for two runs that both completed."""
    bad = next((row for row in rows if not row.ok), None)
    if bad is not None:
        if bad.reached_by != "both":
            return Verdict(
                DIFFERENT, f"only the {bad.reached_by} run reached step {bad.step}", bad.step
            )
        return Verdict(
            DIFFERENT,
            f"the losses diverge at step {bad.step}: original {_num(bad.original)}, "
            f"migrated {_num(bad.migrated)} (relative difference {_num(bad.rel_diff, '.1e')}, "
            f"tolerance rtol {tolerance.rtol:g} atol {tolerance.atol:g})",
            bad.step,
        )
    last = rows[-1].step if rows else None
    if params.get("missing") or params.get("shape_mismatch"):
        detail = "; ".join(params.get("shape_mismatch") or []) or (
            f"{len(params['missing'])} parameter tensor(s) exist in one run only"
        )
        return Verdict(DIFFERENT, f"the optimizers' parameters do not correspond: {detail}", last)
    if params.get("mismatched"):
        return Verdict(
            DIFFERENT,
            f"the losses agree but the final parameters differ after step {last}: "
            f"{len(params['mismatched'])} of {params['count']} tensors beyond tolerance "
            f"(worst {params['worst']}: relative L2 difference {params['max_rel_diff']:.2e})",
            last,
        )
    if strict:
        return Verdict(DIFFERENT, "--strict: " + "; ".join(strict), None, strict)
    return Verdict(EQUIVALENT, f"losses and final parameters match over {len(rows)} step(s)")


def _num(value: float | None, spec: str = ".8g") -> str:
    return "n/a" if value is None else format(value, spec)
