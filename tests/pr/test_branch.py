"""`tpu-migrate apply --branch`: branch, per-rule commits, refusals, selection, against real git."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import codemods
from migrate import __version__
from migrate.engine import Selection, migrate_file
from tests.pr.conftest import git

pytestmark = pytest.mark.slow  # a git branch and a commit per rule, for each fixture

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

OLD_API = "import torch\nimport torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\nxm.mark_step()\n"
CUDA_DEVICE = (
    "import torch\n\n"
    'device = torch.device("cuda")\n'
    "x = torch.ones(2).to(device)\n"
    "torch.cuda.synchronize()\n"
)
CUDA_STREAM = "import torch\n\nstream = torch.cuda.Stream()\nmodel = torch.nn.Linear(2, 2).cuda()\n"
PROJECT = {
    "a.py": OLD_API,
    "b.py": CUDA_DEVICE,
    "pkg/c.py": CUDA_STREAM,
    "legacy/old.py": CUDA_DEVICE,
    "notes.txt": "not python\n",
}


def commits(repo: Path, base: str = "main", branch: str = "HEAD") -> list[str]:
    return git(repo, "rev-list", "--reverse", f"{base}..{branch}").split()


def subject(repo: Path, sha: str) -> str:
    return git(repo, "log", "-1", "--format=%s", sha).strip()


def changed_files(repo: Path, sha: str) -> list[str]:
    return sorted(git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", sha).split())


def plain_apply(tmp_path: Path, files: dict[str, str] | Path, tpu_migrate, *options: str) -> Path:
    """What plain `apply` (no branch) writes, in a separate copy."""
    copy = tmp_path / "plain"
    if isinstance(files, Path):
        shutil.copytree(files, copy)
    else:
        for relative, text in files.items():
            (copy / relative).parent.mkdir(parents=True, exist_ok=True)
            (copy / relative).write_text(text, encoding="utf-8")
    outcome = tpu_migrate(copy, "apply", ".", *options)
    assert outcome.code == 0, outcome.err
    return copy


def tree_files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def test_one_commit_per_rule_with_code_name_files_and_trailer(make_repo, tpu_migrate):
    repo = make_repo(PROJECT)
    outcome = tpu_migrate(repo, "apply", ".", "--branch", "tpu/migrate")
    assert outcome.code == 0, outcome.err
    assert git(repo, "branch", "--show-current").strip() == "tpu/migrate"
    shas = commits(repo)
    assert [subject(repo, sha) for sha in shas] == [
        "TPU105 modernize-torch-xla: 1 file",
        "TPU127 device-moves: 1 file",
        "TPU101 device-placement: 2 files",
        "TPU104 cuda-runtime-calls: 3 files",
    ]
    assert [changed_files(repo, sha) for sha in shas] == [
        ["a.py"],
        ["pkg/c.py"],
        ["b.py", "legacy/old.py"],
        ["b.py", "legacy/old.py", "pkg/c.py"],
    ]
    message = git(repo, "log", "-1", "--format=%B", shas[3])
    rule = codemods.rule_by_code("TPU104")
    assert rule.SUMMARY.split()[0] in message
    assert "  pkg/c.py       1 finding (TODO marker)" in message
    assert "  b.py           1 rewrite" in message
    trailers = git(repo, "log", "-1", "--format=%(trailers:key=Migrated-by,valueonly)", shas[3])
    assert trailers.strip() == f"tpu-migrate {__version__}"
    author = git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", shas[0]).strip()
    assert author == "Ada Reviewer <ada@example.com>|Ada Reviewer <ada@example.com>"
    assert git(repo, "status", "--porcelain") == ""
    for line in ("go back:           git checkout main", "git branch -D tpu/migrate"):
        assert line in outcome.err


def test_each_commit_is_the_pipeline_of_the_first_k_rules(make_repo, tpu_migrate, tmp_path):
    repo = make_repo(PROJECT)
    assert tpu_migrate(repo, "apply", ".", "--branch", "migrate").code == 0
    codes = Selection.from_options().rule_codes
    original = tmp_path / "original"
    original.mkdir()
    for sha in commits(repo):
        code = subject(repo, sha).split()[0]
        prefix = Selection(codes[: codes.index(code) + 1])
        for path in changed_files(repo, sha):
            (original / "f.py").write_text(PROJECT[path], encoding="utf-8")
            expected = migrate_file(original / "f.py", prefix)
            assert git(repo, "show", f"{sha}:{path}") == expected.new_text, (code, path)


@pytest.mark.parametrize("project", ["trainer_project", "recommender_sparse"])
def test_final_tree_is_plain_apply_and_every_commit_applies_on_its_parent(
    make_repo, tpu_migrate, tmp_path, project
):
    before = FIXTURES / project / "before"
    repo = make_repo(before)
    assert tpu_migrate(repo, "apply", ".", "--branch", "migrate").code == 0
    assert tree_files(repo) == tree_files(plain_apply(tmp_path, before, tpu_migrate))
    shas = commits(repo)
    assert len(shas) >= 3
    for sha in shas:
        patch = git(repo, "diff", "--binary", f"{sha}^", sha)
        git(repo, "checkout", "-q", "--detach", f"{sha}^")
        check = subprocess.run(
            ["git", "apply", "--check", "-"], cwd=repo, input=patch, text=True, capture_output=True
        )
        assert check.returncode == 0, (subject(repo, sha), check.stderr)
    git(repo, "checkout", "-q", "migrate")


def test_revert_report_matches_what_git_revert_does(make_repo, tpu_migrate, tmp_path):
    repo = make_repo(FIXTURES / "trainer_project" / "before")
    body_file = tmp_path / "body.md"
    outcome = tpu_migrate(repo, "apply", ".", "--branch", "migrate", "--pr-body", str(body_file))
    assert outcome.code == 0, outcome.err
    body = body_file.read_text()
    outcomes = set()
    for sha in commits(repo):
        row = next(line for line in body.splitlines() if line.startswith(f"| {sha[:10]} |"))
        reverted = git(repo, "revert", "--no-commit", sha, check=False)
        clean = "CONFLICT" not in reverted and not git(
            repo, "diff", "--name-only", "--diff-filter=U"
        )
        git(repo, "revert", "--abort", check=False)
        git(repo, "reset", "-q", "--hard")
        assert row.rstrip(" |").endswith("clean") == clean, row
        outcomes.add(clean)
    assert git(repo, "status", "--porcelain") == ""
    assert True in outcomes  # at least one rule can be taken out alone


def test_dirty_work_tree_is_refused_naming_the_files(make_repo, tpu_migrate):
    repo = make_repo(PROJECT)
    (repo / "b.py").write_text(CUDA_DEVICE + "y = 1\n")
    (repo / "scratch.py").write_text("import torch\n")
    outcome = tpu_migrate(repo, "apply", ".", "--branch", "migrate")
    assert outcome.code == 3
    assert "uncommitted changes: b.py (modified), scratch.py (untracked)" in outcome.err
    assert "--allow-dirty" in outcome.err
    assert git(repo, "branch", "--list", "migrate") == ""
    assert (repo / "a.py").read_text() == OLD_API


def test_allow_dirty_leaves_changed_files_out_and_uncommitted(make_repo, tpu_migrate):
    repo = make_repo(PROJECT)
    edited = CUDA_DEVICE + "y = 1\n"
    (repo / "b.py").write_text(edited)
    (repo / "scratch.py").write_text(CUDA_DEVICE)
    outcome = tpu_migrate(repo, "apply", ".", "--branch", "migrate", "--allow-dirty")
    assert outcome.code == 0, outcome.err
    assert "b.py: left out" in outcome.err and "scratch.py: left out" in outcome.err
    touched = {path for sha in commits(repo) for path in changed_files(repo, sha)}
    assert touched == {"a.py", "legacy/old.py", "pkg/c.py"}
    assert (repo / "b.py").read_text() == edited
    assert (repo / "scratch.py").read_text() == CUDA_DEVICE
    assert git(repo, "status", "--porcelain") == " M b.py\n?? scratch.py\n"
    git(repo, "checkout", "-q", "main")  # the printed way back works and keeps the edits
    assert (repo / "b.py").read_text() == edited and (repo / "a.py").read_text() == OLD_API


def test_existing_branch_is_refused(make_repo, tpu_migrate):
    repo = make_repo(PROJECT)
    git(repo, "branch", "migrate")
    outcome = tpu_migrate(repo, "apply", ".", "--branch", "migrate")
    assert outcome.code == 3
    assert "branch 'migrate' already exists" in outcome.err
    assert git(repo, "rev-parse", "migrate") == git(repo, "rev-parse", "main")
    assert git(repo, "branch", "--show-current").strip() == "main"


def test_outside_a_git_repository_is_refused(tpu_migrate, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text(OLD_API)
    outcome = tpu_migrate(plain, "apply", ".", "--branch", "migrate")
    assert outcome.code == 3
    assert "is not inside a git work tree" in outcome.err and "git init" in outcome.err
    assert (plain / "a.py").read_text() == OLD_API


def test_missing_identity_is_a_clear_error_before_anything_changes(
    make_repo, tpu_migrate, monkeypatch
):
    repo = make_repo(PROJECT)
    for name in (
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ):
        monkeypatch.delenv(name)
    outcome = tpu_migrate(repo, "apply", ".", "--branch", "migrate")
    assert outcome.code == 3
    assert "git does not know who you are" in outcome.err
    assert 'git config --global user.email "you@example.com"' in outcome.err
    assert git(repo, "branch", "--list", "migrate") == ""


def test_files_outside_the_selection_are_never_touched(make_repo, tpu_migrate):
    repo = make_repo(PROJECT)
    outcome = tpu_migrate(
        repo, "apply", ".", "--branch", "migrate", "--exclude", "legacy", "--select", "TPU101"
    )
    assert outcome.code == 0, outcome.err
    assert [subject(repo, sha) for sha in commits(repo)] == [
        "TPU127 device-moves: 1 file",  # TPU101 selects its parts too
        "TPU101 device-placement: 1 file",
    ]
    assert git(repo, "diff", "--name-only", "main", "migrate").split() == ["b.py", "pkg/c.py"]
    assert (repo / "legacy/old.py").read_text() == CUDA_DEVICE
    assert (repo / "a.py").read_text() == OLD_API


def test_a_path_argument_limits_the_commits_to_it(make_repo, tpu_migrate):
    repo = make_repo(PROJECT)
    outcome = tpu_migrate(repo / "pkg", "apply", ".", "--branch", "migrate")
    assert outcome.code == 0, outcome.err
    assert git(repo, "diff", "--name-only", "main", "migrate").split() == ["pkg/c.py"]


def test_nothing_to_migrate_makes_no_branch(make_repo, tpu_migrate):
    repo = make_repo({"a.py": "import os\n"})
    outcome = tpu_migrate(repo, "apply", ".", "--branch", "migrate")
    assert outcome.code == 0
    assert "no branch created" in outcome.err
    assert git(repo, "branch", "--list", "migrate") == ""


def test_branch_options_need_branch(make_repo, tpu_migrate):
    repo = make_repo(PROJECT)
    outcome = tpu_migrate(repo, "apply", ".", "--open-pr", "--allow-dirty")
    assert outcome.code == 3
    assert "--allow-dirty, --open-pr only work together with --branch NAME" in outcome.err
    assert (repo / "a.py").read_text() == OLD_API


def test_detached_head_names_the_commit_to_go_back_to(make_repo, tpu_migrate):
    repo = make_repo(PROJECT)
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "--detach")
    outcome = tpu_migrate(repo, "apply", ".", "--branch", "migrate")
    assert outcome.code == 0, outcome.err
    assert f"go back:           git checkout {head}" in outcome.err
    assert len(commits(repo, head)) == 4


def test_the_repository_configuration_selects_the_rules_of_the_branch(make_repo, tpu_migrate):
    repo = make_repo(
        {
            **PROJECT,
            "pyproject.toml": '[tool.tpu-migrate]\nignore = ["TPU104"]\nexclude = ["legacy"]\n',
        }
    )
    outcome = tpu_migrate(repo, "apply", ".", "--branch", "tpu/configured")
    assert outcome.code == 0, outcome.err
    assert [subject(repo, sha) for sha in commits(repo)] == [
        "TPU105 modernize-torch-xla: 1 file",
        "TPU127 device-moves: 1 file",
        "TPU101 device-placement: 1 file",
    ]
    assert git(repo, "show", "HEAD:legacy/old.py") == CUDA_DEVICE
