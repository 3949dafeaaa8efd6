"""The command-line contract: output shapes and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import codemods
from migrate.cli import main
from tests.conftest import NEW_API, OLD_API

BROKEN = "import torch.cuda\n\ndef f(:\n    pass\n"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_diff_prints_unified_diff_and_changes_nothing(project, capsys):
    root = project({"train.py": OLD_API})
    code, out, _ = run(capsys, "diff", "-j", "1", str(root))
    assert code == 1
    assert "--- a/" in out and "+++ b/" in out and "+torch_xla.sync()" in out
    assert (root / "train.py").read_text() == OLD_API


def test_diff_output_applies_with_patch(project, capsys, tmp_path):
    root = project({"pkg/train.py": OLD_API})
    os.chdir(root)
    code, out, _ = run(capsys, "diff", "-j", "1", "pkg")
    assert code == 1
    subprocess.run(["patch", "-p1", "--quiet"], input=out.encode(), cwd=root, check=True)
    assert (root / "pkg/train.py").read_text() == NEW_API


def test_diff_exit_0_when_nothing_to_do(project, capsys):
    root = project({"train.py": NEW_API})
    assert run(capsys, "diff", str(root))[0] == 0


def test_diff_exit_2_on_bad_file_but_prints_the_rest(project, capsys):
    root = project({"a.py": OLD_API, "b.py": BROKEN})
    code, out, err = run(capsys, "diff", "-j", "1", str(root))
    assert code == 2
    assert "+torch_xla.sync()" in out
    assert "b.py:3: syntax error" in err


def test_apply_rewrites_reports_and_is_idempotent(project, capsys):
    root = project({"a.py": OLD_API, "b.py": BROKEN, "c.py": "print('hello')\n"})
    code, out, err = run(capsys, "apply", "-j", "2", str(root))
    assert code == 2  # b.py failed
    assert (root / "a.py").read_text() == NEW_API
    assert (root / "b.py").read_text() == BROKEN
    assert (root / "c.py").read_text() == "print('hello')\n"
    assert "a.py: TPU105 x2" in out
    assert "b.py:3: syntax error" in err
    (root / "b.py").unlink()
    code, out, _ = run(capsys, "apply", str(root))
    assert code == 0 and out == ""
    assert run(capsys, "diff", str(root))[0] == 0


def test_parallel_runs_report_in_path_order(project, capsys):
    """Workers take the largest files first and finish in any order; reports are in path order."""
    padded = OLD_API + "".join(f"# padding line {i}\n" for i in range(300))
    files = {f"m{i}.py": padded if i % 3 == 0 else OLD_API for i in range(10)}
    root = project({**files, "b.py": BROKEN})
    code, out, err = run(capsys, "apply", "-j", "2", str(root))
    assert code == 2 and "b.py:3: syntax error" in err
    reported = [line.split(":")[0].rsplit("/", 1)[-1] for line in out.splitlines()]
    assert reported == [f"m{i}.py" for i in range(10)]


def test_check_json_shape(project, capsys):
    root = project({"a.py": OLD_API, "b.py": BROKEN})
    os.chdir(root)
    code, out, _ = run(capsys, "check", "--format", "json", "-j", "1", ".")
    assert code == 2
    document = json.loads(out)
    assert set(document) == {"version", "files", "summary"}
    files = {f["path"]: f for f in document["files"]}
    assert files["a.py"] == {
        "path": "a.py",
        "changed": True,
        "applied": ["TPU105"],
        "findings": [],
        "error": None,
        "statistics": {
            "rewrites": {"TPU105": 2},
            "findings": {},
            "constructs": 2,
            "migrated_percent": 100.0,
        },
        "unused_suppressions": [],
    }
    assert files["b.py"]["error"].startswith("b.py:3: syntax error")
    assert document["summary"]["files_failed"] == 1
    assert (root / "a.py").read_text() == OLD_API


def test_select_and_ignore(project, capsys):
    root = project({"a.py": OLD_API})
    assert run(capsys, "diff", "--ignore", "TPU105", str(root))[0] == 0
    assert run(capsys, "diff", "--select", "TPU10", str(root))[0] == 1
    code, _, err = run(capsys, "diff", "--select", "TPU999", str(root))
    assert code == 3 and "unknown rule" in err


def test_rules_lists_every_rule(capsys):
    code, out, _ = run(capsys, "rules")
    assert code == 0
    for rule in codemods.PIPELINE:
        assert rule.CODE in out and rule.NAME in out and rule.SAFETY.value in out


@pytest.mark.parametrize("rule", codemods.PIPELINE, ids=lambda r: r.CODE)
def test_explain_prints_documentation(capsys, rule):
    code, out, _ = run(capsys, "explain", rule.CODE.lower())
    assert code == 0
    assert "What it does" in out and "Example" in out


def test_explain_unknown_code_is_a_usage_error(capsys):
    assert run(capsys, "explain", "TPU999")[0] == 3


def test_missing_path_is_reported(capsys, tmp_path):
    code, _, err = run(capsys, "diff", str(tmp_path / "nope"))
    assert code == 2 and "no such file" in err


def test_console_script_and_module_entry_points(project):
    root = project({"a.py": OLD_API})
    for argv in (["tpu-migrate"], [sys.executable, "-m", "migrate"]):
        exe = Path(sys.executable).with_name("tpu-migrate")
        if argv == ["tpu-migrate"]:
            if not exe.exists():
                pytest.skip("console script not installed in this environment")
            argv = [str(exe)]
        proc = subprocess.run([*argv, "diff", str(root)], capture_output=True, text=True)
        assert proc.returncode == 1, proc.stderr
        assert "+torch_xla.sync()" in proc.stdout


def test_rule_runs_under_libcst_codemod_cli(project):
    root = project({"a.py": OLD_API})
    rule = "codemods.tpu105_modernize_torch_xla.ModernizeTorchXla"
    proc = subprocess.run(
        [sys.executable, "-m", "libcst.tool", "codemod", "-x", "--no-format", rule, "a.py"],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert proc.returncode == 0, proc.stderr
    assert (root / "a.py").read_text() == NEW_API
