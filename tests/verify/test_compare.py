"""Tolerances, hygiene arithmetic and the verdict, on hand-made data (no subprocesses)."""

from __future__ import annotations

import math
import sys

import pytest

from migrate.verify.compare import (
    DIFFERENT,
    EQUIVALENT,
    INCONCLUSIVE,
    Tolerance,
    compare_losses,
    decide,
    loose_bounds,
    strict_failures,
    summarize_hygiene,
    untrained,
)

FP32 = Tolerance.default(keep_autocast=False)
PARAMS_OK = {
    "count": 2,
    "max_abs_diff": 0.0,
    "max_rel_diff": 0.0,
    "worst": None,
    "mismatched": [],
    "missing": [],
    "shape_mismatch": [],
}


def steps(*losses):
    return [{"step": i + 1, "loss": loss} for i, loss in enumerate(losses)]


def test_default_tolerances_follow_the_measured_drift():
    assert (FP32.rtol, FP32.atol) == (1e-5, 1e-6)
    assert Tolerance.default(keep_autocast=True).rtol == 2e-2
    assert Tolerance.default(keep_autocast=True, rtol=0.1, atol=0.0) == Tolerance(0.1, 0.0)


@pytest.mark.parametrize(
    ("a", "b", "close"),
    [
        (1.0, 1.0 + 2.1e-7, True),  # MLP drift measured on XLA:CPU
        (2.0, 2.0 * (1 + 1.06e-6), True),  # CNN + BatchNorm drift
        (1.0, 1.0 + 3.5e-3, False),  # bf16 autocast drift is not fp32-equivalent
        (0.0, 5e-7, True),  # atol covers losses near zero
        (math.nan, math.nan, True),
        (math.nan, 1.0, False),
        (math.inf, math.inf, True),
        (None, None, True),
        (1.0, None, False),
    ],
)
def test_loss_tolerance(a, b, close):
    assert FP32.close(a, b) is close


def test_rows_mark_steps_only_one_run_reached():
    rows = compare_losses(steps(1.0, 0.9, 0.8), steps(1.0, 0.9), FP32)
    assert [(r.step, r.ok, r.reached_by) for r in rows] == [
        (1, True, "both"),
        (2, True, "both"),
        (3, False, "original"),
    ]
    verdict = decide(rows, PARAMS_OK, FP32, [])
    assert verdict.verdict == DIFFERENT and verdict.first_diverging_step == 3
    assert verdict.reason == "only the original run reached step 3"


def test_first_diverging_step_is_named():
    rows = compare_losses(steps(1.0, 0.9, 0.8, 0.7), steps(1.0, 0.9, 0.85, 0.9), FP32)
    verdict = decide(rows, PARAMS_OK, FP32, [])
    assert verdict.first_diverging_step == 3
    assert verdict.reason.startswith("the losses diverge at step 3: original 0.8, migrated 0.85")


def test_parameters_decide_when_the_losses_agree():
    rows = compare_losses(steps(1.0, 0.9), steps(1.0, 0.9), FP32)
    params = {
        **PARAMS_OK,
        "mismatched": ["optimizer0.group0.param1"],
        "worst": "optimizer0.group0.param1",
        "max_abs_diff": 0.5,
    }
    verdict = decide(rows, params, FP32, [])
    assert verdict.verdict == DIFFERENT and verdict.first_diverging_step == 2
    assert "final parameters differ after step 2" in verdict.reason
    assert decide(rows, PARAMS_OK, FP32, []).verdict == EQUIVALENT
    assert decide(rows, {**PARAMS_OK, "missing": ["x"]}, FP32, []).verdict == DIFFERENT


def test_a_run_that_moved_no_parameter_and_kept_its_loss_is_inconclusive():
    rows = compare_losses(steps(0.0, 0.0, -0.0), steps(0.0, 0.0, 0.0), FP32)
    equivalent = decide(rows, PARAMS_OK, FP32, [])
    frozen = {"params_moved": 0, "params_tracked": 2}
    verdict, notes = untrained(equivalent, frozen, rows)
    assert verdict.verdict == INCONCLUSIVE and notes == []
    assert verdict.reason.startswith(
        "the original run trained nothing: its 3 step(s) left all 2 parameter tensor(s) unchanged "
        "and its loss was 0 at every step"
    )


def test_frozen_parameters_with_a_moving_loss_stay_equivalent_with_a_note():
    rows = compare_losses(steps(1.0, 0.9), steps(1.0, 0.9), FP32)
    equivalent = decide(rows, PARAMS_OK, FP32, [])
    verdict, notes = untrained(equivalent, {"params_moved": 0, "params_tracked": 2}, rows)
    assert verdict is equivalent
    assert notes == [
        "no parameter changed in the original run's 2 step(s) (zero gradients, or a learning rate "
        "of 0?): the comparison covers the forward pass only"
    ]


@pytest.mark.parametrize(
    "trace",
    [
        {"params_moved": 1, "params_tracked": 2},  # it trained
        {"params_moved": 0, "params_tracked": 0},  # nothing to tell by
        {},  # a trace written before the count existed, or by the migrated side
    ],
)
def test_a_run_that_trained_or_cannot_tell_keeps_its_verdict(trace):
    rows = compare_losses(steps(0.0, 0.0), steps(0.0, 0.0), FP32)
    equivalent = decide(rows, PARAMS_OK, FP32, [])
    assert untrained(equivalent, trace, rows) == (equivalent, [])


def test_only_an_equivalent_verdict_is_questioned():
    rows = compare_losses(steps(0.0, 0.0), steps(0.0, 0.5), FP32)
    different = decide(rows, PARAMS_OK, FP32, [])
    frozen = {"params_moved": 0, "params_tracked": 2}
    assert different.verdict == DIFFERENT and untrained(different, frozen, rows) == (different, [])


def _tensor(norm, bound):
    return {"name": "t", "original_norm": norm, "bound": bound}


def _noisy_rows(*drifts):
    losses = steps(*(2.0 for _ in drifts))
    noises = [[{"step": i + 1, "loss": 2.0 + d} for i, d in enumerate(drifts)]]
    return compare_losses(losses, losses, Tolerance(1e-5, 1e-6), noises)


def test_bounds_as_large_as_their_values_are_counted_in_a_note():
    rows = _noisy_rows(1e-7, 0.5)  # step 2: 10 x 0.5 drift >= |2.0|
    params = {**PARAMS_OK, "tensors": [_tensor(3.0, 1e-4), _tensor(3.0, 4.0), _tensor(0.0, 1e-6)]}
    equivalent = decide(rows, params, FP32, [])
    verdict, notes = loose_bounds(equivalent, rows, params)
    assert verdict is equivalent
    assert notes == [
        "loose bounds: 1 of 2 losses (from step 2) and 1 of 2 parameter tensors have a bound as "
        "large as the value itself (the noise runs drifted that far), so they could not tell a "
        "broken migration from a correct one; the verdict rests on the others (fewer --steps "
        "keep the bounds tight)"
    ]


def test_a_verdict_whose_every_bound_is_loose_is_inconclusive():
    rows = _noisy_rows(0.3, 0.5)
    params = {**PARAMS_OK, "tensors": [_tensor(3.0, 4.0)]}
    verdict, notes = loose_bounds(decide(rows, params, FP32, []), rows, params)
    assert verdict.verdict == INCONCLUSIVE and notes == []
    assert verdict.reason.startswith(
        "the bounds are as large as the values they bound (2 of 2 losses (from step 1) and 1 of 1 "
        "parameter tensors)"
    )


def test_tight_bounds_and_other_verdicts_are_left_alone():
    rows = _noisy_rows(1e-7, 1e-6)
    params = {**PARAMS_OK, "tensors": [_tensor(3.0, 1e-4)]}
    equivalent = decide(rows, params, FP32, [])
    assert loose_bounds(equivalent, rows, params) == (equivalent, [])
    different = decide(rows, {**params, "mismatched": ["t"], "worst": "t"}, FP32, [])
    assert loose_bounds(different, rows, params) == (different, [])


def _snapshots(compiles, executions, transfers):
    return [
        {"compilations": c, "executions": e, "host_transfers": t, "scalar_reads": t}
        for c, e, t in zip(compiles, executions, transfers)
    ]


def test_hygiene_of_the_naive_loop_from_the_idioms_doc():
    # What XLA:CPU records for 90 samples in batches of 20 with .item() in the step and a sync after it.
    recorded = {
        "per_step": _snapshots([1, 2, 3, 3, 4, 5, 5, 5], [1, 3, 5, 7, 9, 11, 13, 15], range(1, 9)),
        "fallback_ops": ["aten::_local_scalar_dense"],
    }
    hygiene = summarize_hygiene(recorded)
    assert hygiene.compilations == 5
    assert hygiene.compilations_after_warmup == 2  # the partial batch's graphs
    assert hygiene.executions_per_step == 2.0
    assert hygiene.host_transfers_per_step == 1.0
    assert hygiene.mid_step_transfers == 5 and hygiene.steady_steps == 5
    assert [s["compilations"] for s in hygiene.per_step] == [1, 1, 1, 0, 1, 1, 0, 0]
    assert len(strict_failures(hygiene)) == 2


def test_hygiene_of_the_idiomatic_loop():
    recorded = {
        "per_step": _snapshots([0, 1, 2, 2, 2, 2], [0, 1, 2, 3, 4, 5], [0] * 6),
        "fallback_ops": [],
    }
    hygiene = summarize_hygiene(recorded)
    assert (hygiene.compilations, hygiene.compilations_after_warmup) == (2, 0)
    assert (hygiene.executions_per_step, hygiene.host_transfers_per_step) == (1.0, 0.0)
    assert strict_failures(hygiene) == []


def test_a_loop_stepping_two_optimizers_warms_up_for_two_iterations():
    # D, G, D, G, ...: each optimizer compiles its first-step and its steady graphs; the
    # second iteration's steps are still warm-up, not recompilation.
    recorded = {
        "per_step": _snapshots([3, 4, 7, 8, 8, 8, 8], [3, 4, 7, 8, 9, 10, 11], [0] * 7),
        "fallback_ops": [],
        "optimizers": 2,
    }
    hygiene = summarize_hygiene(recorded)
    assert hygiene.warmup_steps == 4 and hygiene.steady_steps == 2
    assert hygiene.compilations_after_warmup == 0
    one_optimizer = summarize_hygiene({**recorded, "optimizers": 1})
    assert one_optimizer.compilations_after_warmup == 1  # what a one-optimizer warm-up misreads


def test_hygiene_of_a_run_too_short_for_a_steady_state():
    hygiene = summarize_hygiene({"per_step": _snapshots([1, 2], [1, 2], [0, 0])})
    assert hygiene.steady_steps == 0 and hygiene.compilations_after_warmup == 0
    assert hygiene.executions_per_step == 1.0


def test_strict_failures_make_an_equivalent_run_different():
    rows = compare_losses(steps(1.0), steps(1.0), FP32)
    verdict = decide(rows, PARAMS_OK, FP32, ["1 graph compilation(s) after warm-up"])
    assert verdict.verdict == DIFFERENT and verdict.strict_failures


def test_the_largest_drift_of_the_noise_runs_sets_the_bound():
    original = steps(1.0, 0.9, 0.8)
    calm, wild = steps(1.0, 0.9, 0.8 + 1e-4), steps(1.0, 0.9 + 1e-5, 0.8 + 1e-3)
    migrated = steps(1.0, 0.9, 0.8 + 5e-3)  # 5 x the wild run's drift, 50 x the calm one's
    alone = compare_losses(original, migrated, FP32, [calm])
    assert [row.noise for row in alone] == [0.0, 0.0, pytest.approx(1e-4)]
    assert not alone[2].ok
    both = compare_losses(original, migrated, FP32, [calm, wild])
    assert [row.noise for row in both] == [0.0, pytest.approx(1e-5), pytest.approx(1e-3)]
    assert all(row.ok for row in both)
    assert both[2].bound == pytest.approx(1e-6 + 1e-5 * 0.8 + 10 * 1e-3)
    # A drift that shrank later still counts, and no noise run means no measured part.
    assert compare_losses(original, migrated, FP32, [steps(1.0, 1.0, 0.8)])[
        2
    ].noise == pytest.approx(0.1)
    assert compare_losses(original, migrated, FP32)[2].noise is None


def test_parameter_bounds_take_the_largest_noise_run_drift(tmp_path):
    torch = pytest.importorskip("torch")
    from migrate.verify.params import compare_in_subprocess, compare_params

    a = {"w": torch.ones(100)}
    migrated = {"w": torch.ones(100) + 1e-3}  # ||a - b|| = 1e-2
    calm = {"w": torch.ones(100) + 1e-5}  # ||a - n|| = 1e-4: bound about 1e-3
    wild = {"w": torch.ones(100) + 1e-4}  # ||a - n|| = 1e-3: bound about 1e-2
    paths = {}
    for name, params in (("a", a), ("b", migrated), ("calm", calm), ("wild", wild)):
        paths[name] = tmp_path / f"{name}.pt"
        torch.save(params, paths[name])

    def judged(*noises, compare=compare_params):
        result = compare(paths["a"], paths["b"], 1e-5, 1e-6, sys.executable, noises, 10.0)
        return result["tensors"][0]

    assert not judged(paths["calm"])["ok"]
    both = judged(paths["calm"], paths["wild"])
    assert both["ok"] and both["noise"] == pytest.approx(1e-3, rel=1e-3)  # 1 + 1e-4 rounds in fp32
    assert judged(paths["wild"], paths["calm"], compare=compare_in_subprocess) == both
    assert judged()["noise"] == 0.0 and not judged()["ok"]


def test_parameter_diff_judges_each_tensor_by_its_norm(tmp_path):
    torch = pytest.importorskip("torch")
    from migrate.verify.params import compare_in_subprocess, compare_params

    g = torch.Generator().manual_seed(0)
    a = {
        "w": torch.randn(64, 64, generator=g),
        "b": torch.randn(64, generator=g),
        "only_a": torch.ones(1),
    }
    near = {k: v.clone() for k, v in a.items()}
    near["w"][3, 7] += 1e-5  # one element drifted, as Adam does on near-zero gradients
    del near["only_a"]
    near["extra"] = torch.ones(2)
    far = {k: v.clone() for k, v in a.items()}
    far["w"] *= 1.001  # a real change (e.g. another learning rate) moves the whole tensor
    far["b"][0] = float("nan")
    paths = {}
    for name, params in (("a", a), ("near", near), ("far", far)):
        paths[name] = tmp_path / f"{name}.pt"
        torch.save(params, paths[name])

    close = compare_params(paths["a"], paths["near"], 1e-5, 1e-6, "unused")
    assert close["mismatched"] == [] and close["missing"] == ["extra", "only_a"]
    assert close["max_abs_diff"] == pytest.approx(1e-5, rel=1e-2) and close["max_rel_diff"] < 1e-5
    different = compare_params(paths["a"], paths["far"], 1e-5, 1e-6, "unused")
    assert different["mismatched"] == ["w", "b"] and different["worst"] == "b"
    assert math.isinf(different["max_rel_diff"])
    # Same answer from the interpreter that ran the scripts (used when this one has no torch).
    assert (
        compare_in_subprocess(paths["a"], paths["near"], 1e-5, 1e-6, sys.executable)["mismatched"]
        == []
    )
