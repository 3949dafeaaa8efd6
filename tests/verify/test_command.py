"""The command line: argument splitting, usage errors (exit 3), JSON rendering. No runs are started."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest

from migrate.verify import command, render
from migrate.verify.compare import Tolerance, Verdict
from migrate.verify.session import Options, Report, UsageError
from tests.verify.helpers import script


def parse(*argv: str) -> Options:
    parser = argparse.ArgumentParser()
    command.add_parser(parser.add_subparsers(dest="command"))
    return command.parse(parser.parse_args(["verify", *argv]))


def test_options_before_and_after_the_script_and_script_arguments_after_double_dash():
    options = parse(
        "--steps", "3", "train.py", "--seed", "7", "--strict", "--", "--epochs", "1", "--steps", "9"
    )
    assert options.script == Path("train.py")
    assert (options.steps, options.seed, options.strict) == (3, 7, True)
    assert options.script_args == ["--epochs", "1", "--steps", "9"]


def test_a_second_double_dash_belongs_to_the_script():
    options = parse("train.py", "--", "a", "--", "b")
    assert options.script_args == ["a", "--", "b"]


def test_script_options_without_double_dash_are_a_usage_error():
    with pytest.raises(UsageError, match="the script's own arguments go after --"):
        parse("train.py", "--epochs", "1")


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["does-not-exist.py"],
        [script("mlp_cuda.py"), "--migrated", "missing_xla.py"],
        [script("mlp_cuda.py"), "--steps", "0"],
        [script("mlp_cuda.py"), "--steps", "many"],
        [script("mlp_cuda.py"), "--noise-runs", "0"],
        [script("mlp_cuda.py"), "--timeout", "-1"],
        [script("mlp_cuda.py"), "--rtol", "-1"],
        [script("mlp_cuda.py"), "--root", "/nonexistent-root"],
        [script("mlp_cuda.py"), "--cwd", "/nonexistent-dir"],
        [script("mlp_cuda.py"), "--python", "/nonexistent/python"],
    ],
    ids=[
        "no-script",
        "missing-script",
        "missing-migrated",
        "zero-steps",
        "bad-steps",
        "no-noise-runs",
        "bad-timeout",
        "negative-rtol",
        "missing-root",
        "missing-cwd",
        "missing-python",
    ],
)
def test_usage_errors_exit_3(argv, verify_cli):
    outcome = verify_cli(*argv)
    assert outcome.code == 3
    assert outcome.err.startswith("tpu-migrate verify: error:")
    assert outcome.result is None


def test_script_outside_root_is_a_usage_error(verify_cli, tmp_path):
    outcome = verify_cli(script("mlp_cuda.py"), "--root", str(tmp_path))
    assert outcome.code == 3 and "is not inside --root" in outcome.err


def test_json_has_no_nan_or_infinity():
    report = Report(Options(script=Path("train.py")), Tolerance(1e-5, 1e-6))
    report.params = {"count": 1, "max_abs_diff": math.inf, "max_rel_diff": math.nan}
    report.verdict = Verdict("different", "params")
    text = render.json_text(report)
    data = json.loads(text)
    assert data["params"]["max_abs_diff"] is None and data["params"]["max_rel_diff"] is None
    assert data["verdict"] == "different" and data["steps"] == [] and data["hygiene"] is None
