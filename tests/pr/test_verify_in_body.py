"""`apply --branch --verify`: the original (as committed) against the branch, in the description."""

from __future__ import annotations

import pytest

from tests.pr.conftest import git
from tests.verify.helpers import SCRIPTS

TRAIN = (SCRIPTS / "mlp_cuda.py").read_text()


@pytest.mark.xla
@pytest.mark.usefixtures("xla_available")
def test_real_verification_is_rendered_into_the_body(make_repo, tpu_migrate, tmp_path):
    repo = make_repo({"train.py": TRAIN})
    body_file = tmp_path / "pr.md"
    outcome = tpu_migrate(
        repo,
        "apply",
        ".",
        "--branch",
        "mig",
        "--pr-body",
        str(body_file),
        "--verify",
        "train.py --steps 4 -- --epochs 1",
    )
    assert outcome.code == 0, outcome.out + outcome.err
    body = body_file.read_text()
    assert "**CPU verification: equivalent**" in body
    assert "`tpu-migrate verify train.py --steps 4 -- --epochs 1` ran the original" in body
    rows = [line for line in body.splitlines() if line.endswith("| ok |")]
    assert [row.split("|")[1].strip() for row in rows] == ["1", "2", "3", "4"]
    assert "| graph compilations | 2 (0 after warm-up) | 0 after warm-up |" in body
    assert "| executions per step | 1.00 | 1.00 |" in body
    assert "migrated script given" not in body
    # The original side really ran the original code: its CUDA calls were mapped to the CPU.
    assert "CUDA mapped to the CPU in the original run" in body
    assert "PJRT_DEVICE=TPU python train.py --epochs 1" in body
    assert "torch_xla" in (repo / "train.py").read_text()
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("missing.py", "--verify: missing.py: no such file"),
        ("train.py --migrated train.py", "--migrated is chosen by apply --branch"),
        ("train.py --no-such-option", "unrecognized arguments: --no-such-option"),
    ],
)
def test_bad_verify_spec_is_a_usage_error_before_anything_changes(
    make_repo, tpu_migrate, spec, message
):
    repo = make_repo({"train.py": TRAIN})
    outcome = tpu_migrate(repo, "apply", ".", "--branch", "mig", "--verify", spec)
    assert outcome.code == 3
    assert message in outcome.err
    assert git(repo, "branch", "--list", "mig") == ""
    assert (repo / "train.py").read_text() == TRAIN


def test_verify_script_outside_the_repository_is_refused(make_repo, tpu_migrate, tmp_path):
    repo = make_repo({"train.py": TRAIN})
    outside = tmp_path / "elsewhere.py"
    outside.write_text(TRAIN)
    outcome = tpu_migrate(repo, "apply", ".", "--branch", "mig", "--verify", str(outside))
    assert outcome.code == 3
    assert "is not inside the git work tree" in outcome.err
