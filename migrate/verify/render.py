"""The verification report as plain text (for a terminal) and as JSON (for PR descriptions)."""

from __future__ import annotations

import json
import math
import shlex

from .compare import EQUIVALENT
from .session import Report

LOCAL_SCALAR = "aten::_local_scalar_dense"


def text(report: Report) -> str:
    lines = [_title(report), *_runs(report), ""]
    if report.rows:
        lines += [*_table(report), ""]
    if report.params is not None:
        lines += [_params_line(report), ""]
    if report.margin is not None and report.margin.get("where"):
        lines += [
            f"margin: the worst difference is {report.margin['ratio']:.2g} times its bound "
            f"({report.margin['where']}; above 1 is beyond tolerance)",
            "",
        ]
    if report.hygiene is not None:
        lines += [*_hygiene(report), ""]
    if report.notes:
        lines.append("notes:")
        lines += [f"  - {note}" for note in report.notes]
        lines.append("")
    if report.failure is not None and report.failure.stderr_tail:
        lines.append(f"stderr of the {report.failure.side} run (last lines):")
        lines += [f"  | {line}" for line in report.failure.stderr_tail.splitlines()]
        lines.append("")
    if report.temp_dir is not None:
        lines += [f"temporary files kept in {report.temp_dir}", ""]
    verdict = report.verdict
    if verdict.verdict == EQUIVALENT:
        lines.append(f"verdict: {verdict.verdict} ({verdict.reason})")
    else:
        lines.append(f"verdict: {verdict.verdict} - {verdict.reason}")
    return "\n".join(lines) + "\n"


def _title(report: Report) -> str:
    options = report.options
    bounds = f"rtol {report.tolerance.rtol:g}, atol {report.tolerance.atol:g}"
    if report.tolerance.multiplier:
        bounds += f" + {report.tolerance.multiplier:g} x noise-run drift"
    return (
        f"tpu-migrate verify {options.script.name}: {options.steps} optimizer step(s), "
        f"seed {options.seed}, bounds {bounds}"
    )


def _runs(report: Report) -> list[str]:
    lines = []
    for run, where in (
        (report.original, "CPU"),
        *((noise, "CPU, nudged") for noise in report.noises),
        (report.migrated, "XLA:CPU"),
    ):
        if run is None:
            continue
        spec, label = run.spec, run.spec.name
        status = (
            "timed out"
            if run.timed_out
            else "stopped early" if run.cancelled else f"exit {run.returncode}"
        )
        lines.append(
            f"  {label + ':':<10}{shlex.join([str(spec.script), *spec.args])}  "
            f"[{where}, {status}, {run.seconds:.1f} s]"
        )
    return lines


def _table(report: Report) -> list[str]:
    header = (
        f"{'step':>5}  {'original loss':>15}  {'migrated loss':>15}  {'rel diff':>9}  "
        f"{'diff/bound':>10}"
    )
    lines = [header, "-" * len(header)]
    for row in report.rows:
        mark = (
            ""
            if row.ok
            else "  <- differs" if row.reached_by == "both" else f"  <- {row.reached_by} only"
        )
        ratio = "n/a" if row.ratio is None else f"{row.ratio:.2g}"
        lines.append(
            f"{row.step:>5}  {_loss(row.original):>15}  {_loss(row.migrated):>15}  "
            f"{_sci(row.rel_diff):>9}  {ratio:>10}{mark}"
        )
    return lines


def _params_line(report: Report) -> str:
    params = report.params
    line = (
        f"parameters: {params['count']} tensors, max rel diff {_sci(params['max_rel_diff'])} "
        f"(per tensor ||a-b|| / ||a||), max abs diff {_sci(params['max_abs_diff'])} (element-wise)"
    )
    if params.get("mismatched"):
        line += f"; {len(params['mismatched'])} beyond tolerance, worst {params['worst']}"
    if params.get("missing"):
        line += f"; in one run only: {', '.join(params['missing'])}"
    if params.get("shape_mismatch"):
        line += f"; shapes differ: {'; '.join(params['shape_mismatch'])}"
    return line


def _hygiene(report: Report) -> list[str]:
    h = report.hygiene
    ops = (
        ", ".join(
            f"{op} (.item()/float()/bool() reads)" if op == LOCAL_SCALAR else op
            for op in h.fallback_ops
        )
        or "none"
    )
    steady = f"over {h.steady_steps} steady-state steps" if h.steady_steps else "whole-run average"
    return [
        "TPU hygiene of the migrated run (torch_xla.debug.metrics):",
        f"  graph compilations        {h.compilations} ({h.compilations_after_warmup} after warm-up)",
        f"  executions per step       {h.executions_per_step:.2f}  ({steady})",
        f"  host transfers per step   {h.host_transfers_per_step:.2f}",
        f"  mid-step host transfers   {h.mid_step_transfers} step(s)",
        f"  ops that fell back to CPU {ops}",
    ]


def _loss(value: float | None) -> str:
    return "-" if value is None else f"{value:.8g}"


def _sci(value: float | None) -> str:
    if value is None:
        return "n/a"
    if math.isinf(value):
        return "inf"
    return f"{value:.1e}"


def to_json(report: Report) -> dict:
    verdict = report.verdict
    failure = report.failure
    return _finite(
        {
            "verdict": verdict.verdict,
            "reason": verdict.reason,
            "first_diverging_step": verdict.first_diverging_step,
            "steps": [
                {
                    "step": r.step,
                    "original_loss": r.original,
                    "migrated_loss": r.migrated,
                    "rel_diff": r.rel_diff,
                    "bound": r.bound,
                    "noise_drift": r.noise,
                    "ratio": r.ratio,
                    "within_tolerance": r.ok,
                }
                for r in report.rows
            ],
            "params": report.params,
            "hygiene": report.hygiene.to_json() if report.hygiene is not None else None,
            "notes": list(report.notes),
            "strict": report.options.strict,
            "strict_failures": list(verdict.strict_failures),
            "tolerance": {
                "rtol": report.tolerance.rtol,
                "atol": report.tolerance.atol,
                "noise_multiplier": report.tolerance.multiplier,
                "measured": bool(report.tolerance.multiplier),
            },
            "margin": report.margin,
            "requested_steps": report.options.steps,
            "seed": report.options.seed,
            "script": str(report.options.script),
            "migrated_script": str(report.migrated_script) if report.migrated_script else None,
            "runs": {
                run.spec.name: _run_json(run)
                for run in (report.original, *report.noises, report.migrated)
                if run
            },
            "failure": (
                None
                if failure is None
                else {
                    "side": failure.side,
                    "message": failure.message,
                    "stderr_tail": failure.stderr_tail,
                }
            ),
        }
    )


def _run_json(run) -> dict:
    trace = run.trace or {}
    return {
        "command": [str(run.spec.script), *run.spec.args],
        "cwd": str(run.spec.cwd),
        "returncode": run.returncode,
        "timed_out": run.timed_out,
        "seconds": round(run.seconds, 3),
        "failure": run.failure,
        "processes": len(run.traces),
        "compared_pid": trace.get("pid"),
        "compared_rank": trace.get("rank"),
        "param_devices": trace.get("param_devices"),
    }


def json_text(report: Report) -> str:
    return json.dumps(to_json(report), indent=2, allow_nan=False) + "\n"


def _finite(value):
    """JSON has no NaN or infinity: they become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value
