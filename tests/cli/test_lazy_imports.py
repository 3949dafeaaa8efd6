"""What each command imports: pre-commit starts the CLI on every commit, and a command must not
pay for what only another one needs. Checked through ``sys.modules`` in a fresh interpreter
running ``python -m migrate``; the times themselves are bench/startup.py's, never asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from migrate.rule_table import ROWS, rows_from_rules
from tests.conftest import OLD_API

REPO = Path(__file__).resolve().parents[2]

# `python -m migrate ARGS`, then the exit code and every module imported by then
PROBE = """
import contextlib, io, json, runpy, sys
sys.argv = ["migrate", *sys.argv[1:]]
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        runpy.run_module("migrate", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""

# what none of --help, rules and explain needs: the PR code (jinja2), the verification, the
# layout (black), the terminal (rich), the engine and the report writers; nor torch, ever
# (--help and rules not even the rules, nor libcst)
NOT_FOR_RULES = (
    "black",
    "jinja2",
    "rich",
    "torch",
    "migrate.commands",
    "migrate.engine",
    "migrate.layout",
    "migrate.markdown_report",
    "migrate.pr.command",
    "migrate.report",
    "migrate.sarif",
    "migrate.terminal",
    "migrate.verify.session",
)


def _run(*argv: str, cwd: Path = REPO) -> tuple[int, set[str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TPU_MIGRATE_CACHE_DIR": str(cwd / ".cache")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout)
    return result["code"], set(result["modules"])


def test_help_imports_neither_the_rules_nor_libcst():
    code, modules = _run("--help")
    assert code == 0
    assert "migrate.cli" in modules  # (the probe ran the CLI)
    imported = modules & {*NOT_FOR_RULES, "codemods", "libcst"}
    assert not imported, sorted(imported)
    # of the verification, only what its options need (their defaults)
    verify = {name for name in modules if name.startswith("migrate.verify.")}
    assert verify <= {"migrate.verify.command", "migrate.verify.compare"}, sorted(verify)


def test_a_command_that_fails_to_parse_imports_nothing_more(tmp_path):
    code, modules = _run("check", "--format", "yaml", cwd=tmp_path)
    assert code == 3
    assert not modules & {"codemods", "libcst", "migrate.engine"}


def test_rules_prints_its_table_without_importing_a_rule():
    code, modules = _run("rules")
    assert code == 0
    assert "migrate.rule_table" in modules
    imported = modules & {*NOT_FOR_RULES, "codemods", "libcst"}
    assert not imported, sorted(imported)


def test_the_rules_table_is_what_the_rules_say():
    """`rules` prints ``ROWS`` where it used to ask each rule: it must be what they say."""
    assert ROWS == rows_from_rules(), "rewrite it: python -m migrate.rule_table"


def test_explain_imports_the_rules_and_nothing_it_does_not_need():
    for argv in (["explain", "TPU101"], ["explain", "TPU241"]):
        code, modules = _run(*argv)
        assert code == 0, argv
        assert "codemods.tpu101_device_placement" in modules, argv
        imported = modules & set(NOT_FOR_RULES)
        assert not imported, (argv, sorted(imported))


def test_check_imports_the_engine_but_not_the_pr_code_nor_the_verification(tmp_path):
    (tmp_path / "train.py").write_text(OLD_API, encoding="utf-8")
    code, modules = _run("check", "--jobs", "1", str(tmp_path), cwd=tmp_path)
    assert code == 1  # the file would change
    assert "migrate.engine" in modules and "codemods.tpu105_modernize_torch_xla" in modules
    imported = modules & {
        "jinja2",
        "torch",
        "migrate.markdown_report",
        "migrate.pr.command",
        "migrate.sarif",
        "migrate.verify.session",
    }
    assert not imported, sorted(imported)


def test_a_small_project_is_checked_without_worker_processes(tmp_path):
    """Below ``IN_PROCESS_BELOW_BYTES`` the files are migrated in the CLI's own process,
    whatever ``--jobs`` says: the process pool's code is not even imported."""
    for name in ("train.py", "model.py"):
        (tmp_path / name).write_text(OLD_API, encoding="utf-8")
    code, modules = _run("check", "--jobs", "2", str(tmp_path), cwd=tmp_path)
    assert code == 1  # the files would change: they were migrated
    assert "migrate.engine" in modules
    assert "concurrent.futures.process" not in modules
