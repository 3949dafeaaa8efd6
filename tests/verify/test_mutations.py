"""Mutation suite: deliberately wrong migrations that `tpu-migrate verify` must never call equivalent.

fixtures/mutations/ holds two CUDA-style originals, a correct torch_xla port of each and one mutant
per kind of mistake (the correct port with exactly one wrong change, marked `# MUTATION:`). Every
mutant must be "different" (exit 1); every correct port "equivalent" (exit 0), so the suite raises
no false alarm. Each case prints its margin: the worst measured difference over its allowed bound
(above 1 is beyond tolerance) and where it was measured.
"""

from __future__ import annotations

import ast
import difflib
import math
from pathlib import Path

import pytest

pytestmark = [pytest.mark.xla, pytest.mark.usefixtures("xla_available")]

MUTATIONS = Path(__file__).resolve().parents[2] / "fixtures" / "mutations"

CNN_STEPS, MLP_STEPS = "5", "6"  # MLP: 6 optimizer steps = 12 accumulated micro-batches

# kind -> (original, mutant, extra verify options)
MUTANTS = {
    "lr": ("cnn", "mutant_lr_xla.py", ()),
    "no_zero_grad": ("cnn", "mutant_no_zero_grad_xla.py", ()),
    "loss_sum": ("cnn", "mutant_loss_sum_xla.py", ()),
    "param_group": ("mlp", "mutant_param_group_xla.py", ()),
    "shuffle": ("cnn", "mutant_shuffle_xla.py", ()),
    "frozen_layer": ("cnn", "mutant_frozen_layer_xla.py", ()),
    "detach": ("cnn", "mutant_detach_xla.py", ()),
    "no_clip": ("cnn", "mutant_no_clip_xla.py", ()),
    "accumulation": ("mlp", "mutant_accumulation_xla.py", ()),
    "skip_batch": ("cnn", "mutant_skip_batch_xla.py", ()),
    "weight_decay": ("cnn", "mutant_weight_decay_xla.py", ()),
    # Dropout is switched off on both sides by default, which would hide this change by design.
    "dropout": ("cnn", "mutant_dropout_xla.py", ("--keep-dropout",)),
}

# id -> (original, extra verify options). With dropout kept the masks must match on both sides.
CORRECT = {
    "cnn": ("cnn", ()),
    "mlp": ("mlp", ()),
    "cnn-keep-dropout": ("cnn", ("--keep-dropout",)),
}


def _verify(verify_cli, base: str, migrated: str, extra: tuple[str, ...]):
    steps = CNN_STEPS if base == "cnn" else MLP_STEPS
    return verify_cli(
        str(MUTATIONS / f"original_{base}.py"),
        "--migrated",
        str(MUTATIONS / migrated),
        "--steps",
        steps,
        *extra,
    )


def margin(result: dict) -> tuple[float, str]:
    """(worst measured difference / its allowed bound, where): verify's own figure when it gives one.

    Without result["margin"], the bounds are rtol/atol alone: |a - b| <= atol + rtol * |a| per step
    loss, ||a - b|| <= atol + rtol * ||a|| per parameter tensor.
    """
    given = result.get("margin")
    if given and given.get("ratio") is not None:
        return float(given["ratio"]), str(given.get("where"))
    rtol, atol = result["tolerance"]["rtol"], result["tolerance"]["atol"]
    worst = (0.0, "nothing compared")

    def consider(ratio: float, where: str) -> None:
        nonlocal worst
        if ratio > worst[0] or worst[1] == "nothing compared":
            worst = (ratio, where)

    for step in result["steps"]:
        a, b = step["original_loss"], step["migrated_loss"]
        if a is None and b is None:
            continue
        if a is None or b is None:  # one run only, or a NaN/inf the JSON turned into null
            consider(math.inf, f"loss at step {step['step']} (one run only / not finite)")
        else:
            consider(abs(a - b) / (atol + rtol * abs(a)), f"loss at step {step['step']}")
    params = result.get("params") or {}
    for name in params.get("missing") or []:
        consider(math.inf, f"parameter {name} (in one run only)")
    for mismatch in params.get("shape_mismatch") or []:
        consider(math.inf, f"parameter {mismatch} (shapes differ)")
    for tensor in params.get("tensors") or []:
        scale, rel = tensor["original_norm"], tensor["rel_diff"]
        if rel is None:
            distance = math.inf
        elif scale:
            distance = rel * scale
        else:  # ||a|| == 0: the largest element-wise difference is the best figure left
            distance = tensor["abs_diff"] if rel else 0.0
        consider(distance / (atol + rtol * scale), f"parameter {tensor['name']}")
    if not params.get("tensors") and params.get("max_rel_diff") is not None:
        consider(params["max_rel_diff"] / rtol, f"parameter {params.get('worst')}")
    return worst


def _report(label: str, outcome) -> str:
    result = outcome.result
    assert result is not None, outcome.out + outcome.err
    ratio, where = margin(result)
    first = result.get("first_diverging_step")
    print(
        f"\n{label}: verdict {result['verdict']}, margin {ratio:.3g} ({where}), "
        f"first diverging step {first}"
    )
    return result["verdict"]


@pytest.mark.parametrize("kind", list(MUTANTS))
def test_wrong_migration_is_never_equivalent(verify_cli, kind):
    base, mutant, extra = MUTANTS[kind]
    outcome = _verify(verify_cli, base, mutant, extra)
    verdict = _report(kind, outcome)
    assert verdict != "equivalent", f"{kind}: a wrong migration was called equivalent\n" + (
        outcome.out
    )
    assert outcome.code == 1 and verdict == "different", outcome.out + outcome.err
    assert margin(outcome.result)[0] > 1, "verdict different, yet every difference within bounds"


@pytest.mark.parametrize("name", list(CORRECT))
def test_correct_port_is_equivalent(verify_cli, name):
    """No false alarm: the suite is only worth something if the right migration passes."""
    base, extra = CORRECT[name]
    outcome = _verify(verify_cli, base, f"correct_{base}_xla.py", extra)
    verdict = _report(f"correct {name}", outcome)
    assert outcome.code == 0 and verdict == "equivalent", outcome.out + outcome.err
    assert margin(outcome.result)[0] <= 1


def _code_lines(path: Path) -> list[str]:
    """The script's lines after its module docstring."""
    text = path.read_text()
    docstring = ast.parse(text).body[0]
    return text.splitlines()[docstring.end_lineno :]


def test_every_mutant_is_the_correct_port_with_one_marked_change():
    """Each mutant differs from its correct port in one place (besides the docstring), commented."""
    for kind, (base, mutant, _) in MUTANTS.items():
        correct = _code_lines(MUTATIONS / f"correct_{base}_xla.py")
        wrong = _code_lines(MUTATIONS / mutant)
        changes = [
            (tag, wrong[j1:j2])
            for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, correct, wrong).get_opcodes()
            if tag != "equal"
        ]
        assert len(changes) == 1, f"{mutant}: {len(changes)} changed places, want exactly 1"
        assert any("# MUTATION:" in line for line in changes[0][1]), mutant
    assert len(MUTANTS) >= 12
    assert sorted(p.name for p in MUTATIONS.glob("mutant_*_xla.py")) == sorted(
        mutant for _, mutant, _ in MUTANTS.values()
    )


def test_margin_is_computed_from_the_bounds_when_verify_gives_none():
    result = {
        "tolerance": {"rtol": 1e-5, "atol": 1e-6},
        "steps": [
            {"step": 1, "original_loss": 2.0, "migrated_loss": 2.0, "rel_diff": 0.0},
            {"step": 2, "original_loss": 2.0, "migrated_loss": 2.0001, "rel_diff": 5e-5},
        ],
        "params": {
            "max_rel_diff": 1e-3,
            "worst": "p0",
            "tensors": [
                {"name": "p0", "original_norm": 1.0, "rel_diff": 1e-3, "abs_diff": 1e-3},
            ],
        },
    }
    ratio, where = margin(result)
    assert where == "parameter p0" and ratio == pytest.approx(1e-3 / 1.1e-5)
    result["params"]["missing"] = ["optimizer0.group1.param0"]
    assert margin(result) == (math.inf, "parameter optimizer0.group1.param0 (in one run only)")
    result["margin"] = {"ratio": 3.5, "where": "loss at step 2"}
    assert margin(result) == (3.5, "loss at step 2")
