"""``[tool.tpu-migrate]`` in pyproject.toml: discovery, flags overriding it, strict validation,
and per-rule options reaching the rules."""

from __future__ import annotations

import pickle
import textwrap
from typing import ClassVar

import pytest

import codemods
from codemods._base import Safety, TpuCodemod
from migrate.cli import main
from migrate.config import Config, find_pyproject, load_config
from migrate.engine import Selection, migrate_file, migrate_files
from tests.conftest import OLD_API

TWO_RULES = (  # TPU104 and TPU105 apply
    "import torch\nimport torch_xla.core.xla_model as xm\n\ntorch.cuda.synchronize()\nxm.mark_step()\n"
)


def pyproject(body: str) -> str:
    return "[project]\nname = 'demo'\n\n" + textwrap.dedent(body)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_nearest_pyproject_with_our_table_is_found_walking_up(project):
    root = project(
        {
            "pyproject.toml": pyproject("[tool.tpu-migrate]\nignore = ['TPU105']\n"),
            "pkg/pyproject.toml": "[tool.black]\nline-length = 100\n",  # not ours: skipped
            "pkg/sub/train.py": OLD_API,
        }
    )
    assert find_pyproject([root / "pkg/sub/train.py"]) == root / "pyproject.toml"
    assert find_pyproject([root / "pkg/sub"]) == root / "pyproject.toml"
    assert load_config(root / "pyproject.toml").ignore == ("TPU105",)


def test_walk_stops_at_the_repository_root(project):
    root = project(
        {
            "pyproject.toml": pyproject("[tool.tpu-migrate]\nignore = ['TPU105']\n"),
            "repo/.git/HEAD": "ref: refs/heads/main\n",
            "repo/train.py": OLD_API,
        }
    )
    assert find_pyproject([root / "repo"]) is None


def test_config_select_and_ignore_apply_and_flags_replace_them(project, capsys):
    root = project(
        {
            "pyproject.toml": pyproject("[tool.tpu-migrate]\nignore = ['TPU105']\n"),
            "train.py": OLD_API,
        }
    )
    assert run(capsys, "diff", "-j", "1", str(root))[0] == 0  # TPU105 ignored by the config
    assert run(capsys, "diff", "-j", "1", "--ignore", "TPU104", str(root))[0] == 1
    assert run(capsys, "diff", "-j", "1", "--no-config", str(root))[0] == 1


def test_config_select_and_extend_select(project, capsys):
    root = project(
        {
            "pyproject.toml": pyproject("[tool.tpu-migrate]\nselect = ['TPU104']\n"),
            "train.py": TWO_RULES,
        }
    )
    code, out, _ = run(capsys, "check", "-j", "1", str(root))
    assert code == 1 and "would apply TPU104 x1\n" in out
    code, out, _ = run(capsys, "check", "-j", "1", "--extend-select", "TPU105", str(root))
    assert "would apply TPU104 x1, TPU105 x1\n" in out
    code, out, _ = run(capsys, "check", "-j", "1", "--select", "TPU105", str(root))
    assert "would apply TPU105 x1\n" in out


def test_config_exclude_and_flag_exclude(project, capsys):
    root = project(
        {
            "pyproject.toml": pyproject("[tool.tpu-migrate]\nexclude = ['legacy']\n"),
            "legacy/old.py": OLD_API,
        }
    )
    assert run(capsys, "diff", "-j", "1", str(root))[0] == 0
    assert run(capsys, "diff", "-j", "1", "--exclude", "other", str(root))[0] == 1


def test_config_jobs_and_target_are_read(project):
    root = project(
        {"pyproject.toml": pyproject("[tool.tpu-migrate]\njobs = 3\ntarget = 'torch_xla'\n")}
    )
    config = load_config(root / "pyproject.toml")
    assert config.jobs == 3 and config.target == "torch_xla"


def test_explicit_config_file(project, capsys, tmp_path):
    root = project(
        {"train.py": OLD_API, "conf/tpu.toml": "[tool.tpu-migrate]\nignore = ['TPU1']\n"}
    )
    code, _, _ = run(capsys, "diff", "-j", "1", "--config", str(root / "conf/tpu.toml"), str(root))
    assert code == 0
    code, _, err = run(capsys, "diff", "--config", str(root / "missing.toml"), str(root))
    assert code == 3 and "missing.toml: cannot read" in err


@pytest.mark.parametrize(
    "table, message",
    [
        ("selct = ['TPU101']", "unknown key 'selct'"),
        ("select = ['TPU999']", "select: unknown rule code or prefix 'TPU999'"),
        ("ignore = 'TPU101'", "ignore: expected a list of strings"),
        ("exclude = [1]", "exclude: expected a list of strings"),
        ("jobs = 0", "jobs: expected a whole number of at least 1"),
        ("jobs = true", "jobs: expected a whole number of at least 1"),
        ("target = 'jax'", "target: unknown target 'jax'; supported: torch_xla"),
        ("options = 3", "options: expected tables"),
        ("[tool.tpu-migrate.options.TPU999]\nx = 1", "options.TPU999: 'TPU999' is not a rule code"),
        (
            "[tool.tpu-migrate.options.TPU201]\nx = 1",
            "options.TPU201: 'TPU201' is not a rule code",
        ),
        (
            "[tool.tpu-migrate.options.TPU104]\nbucket_size = 64",
            "options.TPU104.bucket_size: TPU104 has no option 'bucket_size' (its options: none)",
        ),
        ("select = [", "not valid TOML"),
    ],
)
def test_invalid_configuration_is_a_usage_error_naming_file_and_key(
    project, capsys, table, message
):
    root = project({"pyproject.toml": pyproject(f"[tool.tpu-migrate]\n{table}\n"), "a.py": OLD_API})
    code, out, err = run(capsys, "check", str(root))
    assert code == 3
    assert str(root / "pyproject.toml") in err
    assert message in err
    assert out == ""


class _Padding(TpuCodemod):
    """What it does / Why / Example: reports the configured bucket size, for the plumbing."""

    CODE, NAME, SUMMARY, SAFETY = "TPU197", "padding", "pads", Safety.MANUAL
    FINDINGS = {"TPU297": "padding bucket"}
    OPTIONS: ClassVar[dict[str, object]] = {
        "bucket_size": 128,
        "mode": "pow2",
        "ratio": 0.5,
        "buckets": [64, 128],
    }

    def leave_Module(self, original_node, updated_node):
        text = f"bucket {self.option('bucket_size')} {self.option('mode')} {self.option('ratio')}"
        text += f" {list(self.option('buckets'))}"
        self.flag(original_node.body[0], "TPU297", text)
        return updated_node


@pytest.fixture
def padding_rule(monkeypatch):
    monkeypatch.setattr(codemods, "PIPELINE", (*codemods.PIPELINE, _Padding))
    return _Padding


def test_rule_options_reach_the_rule_through_the_selection(project, padding_rule):
    root = project({"t.py": "import torch\n"})
    default = migrate_file(root / "t.py", Selection.from_options(["TPU197", "TPU297"]))
    assert default.findings[0].message == "bucket 128 pow2 0.5 [64, 128]"
    selection = Selection.from_options(
        ["TPU197", "TPU297"], options={"TPU197": {"bucket_size": 64}}
    )
    assert pickle.loads(pickle.dumps(selection)) == selection
    hash(selection)  # frozen and hashable: workers and caches can key on it
    [result] = migrate_files([root / "t.py"], selection, jobs=1)
    assert result.findings[0].message == "bucket 64 pow2 0.5 [64, 128]"


def test_rule_options_from_pyproject_reach_the_rule(project, capsys, padding_rule):
    root = project(
        {
            "pyproject.toml": pyproject(
                "[tool.tpu-migrate]\nselect = ['TPU197', 'TPU297']\n\n"
                "[tool.tpu-migrate.options.TPU197]\n"
                "bucket_size = 64\nratio = 1\nbuckets = [8, 16]\n"
            ),
            "t.py": "import torch\n",
        }
    )
    code, out, _ = run(capsys, "check", "-j", "1", str(root))
    assert code == 1
    assert "TPU297 bucket 64 pow2 1 [8, 16]" in out


@pytest.mark.parametrize(
    "options, message",
    [
        ("bucket_size = '64'", "options.TPU197.bucket_size: expected a whole number"),
        ("bucket_size = true", "options.TPU197.bucket_size: expected a whole number"),
        ("mode = 2", "options.TPU197.mode: expected a string"),
        ("ratio = 'half'", "options.TPU197.ratio: expected a number"),
        (
            "size = 1",
            "TPU197 has no option 'size' (its options: bucket_size, buckets, mode, ratio)",
        ),
        ("buckets = [8, '16']", "options.TPU197.buckets: expected a list like the default"),
        ("mode = {a = 1}", "options.TPU197.mode: expected a value or a list, not a table"),
    ],
)
def test_wrong_option_values_are_usage_errors(project, capsys, padding_rule, options, message):
    root = project(
        {
            "pyproject.toml": pyproject(f"[tool.tpu-migrate.options.TPU197]\n{options}\n"),
            "t.py": "import torch\n",
        }
    )
    code, _, err = run(capsys, "check", str(root))
    assert code == 3 and message in err and "pyproject.toml" in err


def test_no_config_is_an_empty_config():
    assert Config().select is None and Config().options == {}


def test_explain_lists_a_rules_options(capsys, padding_rule):
    code, out, _ = run(capsys, "explain", "TPU197")
    assert code == 0
    assert "Options ([tool.tpu-migrate.options.TPU197] in pyproject.toml, defaults):" in out
    assert (
        '    bucket_size = 128\n    mode = "pow2"\n    ratio = 0.5\n    buckets = [64, 128]\n'
        in out
    )
