"""Tolerances, the loss table, the TPU hygiene summary and the verdict."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

EQUIVALENT, DIFFERENT, FAILED = "equivalent", "different", "failed"
NOT_ON_XLA = "not-on-xla"  # the migrated run's training steps executed no XLA graph
INCONCLUSIVE = "inconclusive"  # the runs agree, but the original's steps changed no parameter

# The floor of every bound: what XLA:CPU and CPU differ by on a step that nothing amplifies
# (measured: <= 2.1e-7 on an MLP, 1.1e-6 on a CNN with BatchNorm); bf16 autocast 3.5e-3.
FP32_RTOL, FP32_ATOL = 1e-5, 1e-6
AUTOCAST_RTOL = 2e-2
# The measured part of every bound: the noise runs' drift from the original (see perturb.py),
# times this. The noise runs' nudges (NUDGE, relative, at each step) stand for XLA's different
# rounding; a correct migration drifts about as far, a wrong one orders of magnitude further.
# The drift is the largest of NOISE_RUNS runs, each nudged its own way: in a chaotic loop one run's
# drift depends on the nudges' direction (README, "Bounds measured for the script"). Two runs cost
# no wall time over one: they share the slot the migrated run leaves free (runner.run_sides).
NOISE_MULTIPLIER = 10.0
NUDGE = 2.0**-20
NOISE_RUNS = 2

# The first step compiles an extra graph (optimizer state is created), the second the steady one.
# A loop that steps several optimizers (a GAN's D and G) warms up for as many iterations.
WARMUP_STEPS = 2


def warmup_steps(optimizers: int = 1) -> int:
    return WARMUP_STEPS * max(optimizers, 1)


@dataclass(frozen=True)
class Tolerance:
    """bound = atol + rtol * |reference| + multiplier * drift of the noise runs (0 without them)."""

    rtol: float
    atol: float
    multiplier: float = NOISE_MULTIPLIER

    @classmethod
    def default(
        cls, keep_autocast: bool, rtol: float | None = None, atol: float | None = None
    ) -> "Tolerance":
        return cls(
            rtol if rtol is not None else (AUTOCAST_RTOL if keep_autocast else FP32_RTOL),
            atol if atol is not None else FP32_ATOL,
        )

    def bound(self, reference: float, drift: float = 0.0) -> float:
        return self.atol + self.rtol * abs(reference) + self.multiplier * drift

    def close(self, reference: float | None, value: float | None, drift: float = 0.0) -> bool:
        if reference is None or value is None:
            return reference is None and value is None
        if math.isnan(reference) or math.isnan(value):
            return math.isnan(reference) and math.isnan(value)
        if math.isinf(reference) or math.isinf(value):
            return reference == value
        return abs(reference - value) <= self.bound(reference, drift)


@dataclass
class StepRow:
    step: int
    original: float | None
    migrated: float | None
    rel_diff: float | None
    ok: bool
    reached_by: str = "both"  # or the one run that reached this step
    noise: float | None = None  # the noise runs' |original - noise| up to this step (the largest)
    bound: float | None = None  # the allowed |original - migrated|

    @property
    def ratio(self) -> float | None:
        """|original - migrated| / bound: above 1 is beyond tolerance."""
        if self.original is None or self.migrated is None or not self.bound:
            return None
        if not (math.isfinite(self.original) and math.isfinite(self.migrated)):
            return None if self.ok else math.inf
        return abs(self.original - self.migrated) / self.bound


def relative_difference(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or math.isnan(a) or math.isnan(b):
        return None
    if a == b:
        return 0.0
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if math.isfinite(scale) else math.inf


def loss_drift(original: list[dict], noises: list[list[dict]]) -> list[float]:
    """|original - noise run| per step, the largest over the noise runs and over the steps so far
    (a drift that shrank can grow back)."""
    drifts, largest = [], 0.0
    for index, step in enumerate(original):
        a = step["loss"]
        for noise in noises:
            b = noise[index]["loss"] if index < len(noise) else None
            if a is not None and b is not None and math.isfinite(a) and math.isfinite(b):
                largest = max(largest, abs(a - b))
        drifts.append(largest)
    return drifts


def compare_losses(
    original: list[dict],
    migrated: list[dict],
    tolerance: Tolerance,
    noises: list[list[dict]] = (),
) -> list[StepRow]:
    """One row per step either run recorded; a step only one run reached does not match."""
    drifts = loss_drift(original, list(noises))
    rows = []
    for index in range(max(len(original), len(migrated))):
        a = original[index]["loss"] if index < len(original) else None
        b = migrated[index]["loss"] if index < len(migrated) else None
        reached_by = (
            "both"
            if index < min(len(original), len(migrated))
            else ("original" if index < len(original) else "migrated")
        )
        drift = drifts[index] if index < len(drifts) else 0.0
        ok = reached_by == "both" and tolerance.close(a, b, drift)
        bound = tolerance.bound(a, drift) if a is not None and math.isfinite(a) else None
        rows.append(
            StepRow(
                index + 1,
                a,
                b,
                relative_difference(a, b),
                ok,
                reached_by,
                drift if noises else None,
                bound,
            )
        )
    return rows


def margin(rows: list[StepRow], params: dict | None) -> dict:
    """The worst measured difference over its bound, and where: above 1 is beyond tolerance."""
    worst = {"ratio": 0.0, "where": None}
    for row in rows:
        if row.ratio is not None and row.ratio >= worst["ratio"]:
            worst = {"ratio": row.ratio, "where": f"loss at step {row.step}"}
    if params and (params.get("missing") or params.get("shape_mismatch")):
        names = params.get("missing") or params.get("shape_mismatch")
        return {"ratio": math.inf, "where": f"parameter {names[0]} (no counterpart)"}
    if params and params.get("max_ratio", 0.0) > worst["ratio"]:
        worst = {"ratio": params["max_ratio"], "where": f"parameter {params['worst']}"}
    return worst


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
    warmup_steps: int = WARMUP_STEPS  # steps not counted as steady state

    def to_json(self) -> dict:
        return asdict(self)


_ZERO = {"compilations": 0, "executions": 0, "host_transfers": 0, "scalar_reads": 0}
_KEYS = tuple(_ZERO)


def summarize_hygiene(recorded: dict) -> Hygiene:
    """Counts are cumulative snapshots taken at each optimizer step (after xm.wait_device_ops()).

    The interval between two snapshots holds one step boundary and the next step's work, so a
    healthy loop adds 1 execution, 0 compilations and no transfer per interval once the graphs of
    the first WARMUP_STEPS steps exist (they are all compiled by the snapshot of step WARMUP_STEPS+1);
    with several optimizers, WARMUP_STEPS steps of each.
    """
    snapshots = [s or _ZERO for s in recorded.get("per_step") or []]
    per_step, previous = [], _ZERO
    for index, snapshot in enumerate(snapshots):
        per_step.append({"step": index + 1, **{k: snapshot[k] - previous[k] for k in _KEYS}})
        previous = snapshot
    last = snapshots[-1] if snapshots else _ZERO
    warmup = warmup_steps(recorded.get("optimizers") or 1)
    steady = per_step[warmup + 1 :]
    if steady:
        base = snapshots[warmup]
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
        warmup_steps=warmup,
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
            f"migrated {_num(bad.migrated)} (difference {_num(_abs_diff(bad), '.2e')}, "
            f"bound {_num(bad.bound, '.2e')}{_drift_words(bad, tolerance)})",
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
            f"(worst {params['worst']}: {params.get('max_ratio', 0.0):.2g} times its bound)",
            last,
        )
    if strict:
        return Verdict(DIFFERENT, "--strict: " + "; ".join(strict), None, strict)
    return Verdict(EQUIVALENT, f"losses and final parameters match over {len(rows)} step(s)")


def untrained(
    verdict: Verdict, original_trace: dict, rows: list[StepRow]
) -> tuple[Verdict, list[str]]:
    """An equivalent verdict, checked against a run that trained nothing (start_values.py): when
    the original's steps left every parameter where it started and its loss never changed, any
    migration agrees with it (zero gradients make the update a no-op on both sides). With a loss
    that changes, the forward passes were compared, and a note says that is all."""
    tracked = original_trace.get("params_tracked") or 0
    if verdict.verdict != EQUIVALENT or not tracked or original_trace.get("params_moved") != 0:
        return verdict, []
    steps = len(rows)
    losses = {row.original for row in rows}
    if len(losses) > 1:
        return verdict, [
            f"no parameter changed in the original run's {steps} step(s) (zero gradients, or a "
            "learning rate of 0?): the comparison covers the forward pass only"
        ]
    loss = next(iter(losses), None)
    loss_words = (
        "it recorded no loss" if loss is None else f"its loss was {_num(loss)} at every step"
    )
    return (
        Verdict(
            INCONCLUSIVE,
            f"the original run trained nothing: its {steps} step(s) left all {tracked} parameter "
            f"tensor(s) unchanged and {loss_words}, so any migration would agree with it (is the "
            "loss constant by construction, such as a cross-entropy over one class?)",
        ),
        [],
    )


def loose_bounds(
    verdict: Verdict, rows: list[StepRow], params: dict | None
) -> tuple[Verdict, list[str]]:
    """An equivalent verdict, checked for what its bounds could tell. A bound as large as the
    value it bounds (a loss, a parameter tensor's norm) accepts anything of that size: the noise
    runs drifted that far, so the loop is chaotic there and a broken migration would pass too.
    A note counts such values; when every compared value is one, nothing was shown."""
    if verdict.verdict != EQUIVALENT:
        return verdict, []
    losses = [r for r in rows if r.bound is not None and r.original]
    loose_losses = [r for r in losses if r.bound >= abs(r.original)]
    tensors = [
        t
        for t in (params or {}).get("tensors") or []
        if t.get("original_norm") and t.get("bound") is not None
    ]
    loose_tensors = [t for t in tensors if t["bound"] >= t["original_norm"]]
    if not loose_losses and not loose_tensors:
        return verdict, []
    what = []
    if loose_losses:
        first = min(r.step for r in loose_losses)
        what.append(f"{len(loose_losses)} of {len(losses)} losses (from step {first})")
    if loose_tensors:
        what.append(f"{len(loose_tensors)} of {len(tensors)} parameter tensors")
    words = " and ".join(what)
    if len(loose_losses) == len(losses) and len(loose_tensors) == len(tensors):
        return (
            Verdict(
                INCONCLUSIVE,
                f"the bounds are as large as the values they bound ({words}): the noise runs "
                "drift that far from the original, so any result would pass (a chaotic loop: "
                "fewer --steps keep the bounds tight)",
            ),
            [],
        )
    return verdict, [
        f"loose bounds: {words} have a bound as large as the value itself (the noise runs "
        "drifted that far), so they could not tell a broken migration from a correct one; the "
        "verdict rests on the others (fewer --steps keep the bounds tight)"
    ]


def _num(value: float | None, spec: str = ".8g") -> str:
    return "n/a" if value is None else format(value, spec)


def _abs_diff(row: StepRow) -> float | None:
    if row.original is None or row.migrated is None:
        return None
    return abs(row.original - row.migrated)


def _drift_words(row: StepRow, tolerance: Tolerance) -> str:
    words = f": rtol {tolerance.rtol:g}, atol {tolerance.atol:g}"
    if row.noise is not None:
        words += f", {tolerance.multiplier:g} x noise-run drift {row.noise:.2e}"
    return words
