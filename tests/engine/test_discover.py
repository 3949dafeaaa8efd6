"""Which files are looked at."""

from __future__ import annotations

import os
import subprocess

from migrate.discover import discover


def names(found, root):
    return sorted(p.relative_to(root).as_posix() for p in found.files)


def test_walk_skips_virtualenvs_vcs_and_build_dirs(project):
    root = project(
        {
            "train.py": "",
            "pkg/model.py": "",
            "notes.txt": "",
            ".git/hooks/x.py": "",
            "build/lib/old.py": "",
            "env/pyvenv.cfg": "",
            "env/lib/site.py": "",
            "__pycache__/c.py": "",
        }
    )
    assert names(discover([root]), root) == ["pkg/model.py", "train.py"]


def test_exclude_patterns(project):
    root = project({"train.py": "", "tests/test_x.py": "", "gen/a_pb2.py": ""})
    found = discover([root], exclude=["tests", "*_pb2.py"])
    assert names(found, root) == ["train.py"]


def test_git_work_tree_uses_tracked_and_untracked_not_ignored(project):
    root = project(
        {
            "tracked.py": "",
            "untracked.py": "",
            "ignored.py": "",
            "data/cache.py": "",
            ".gitignore": "ignored.py\ndata/\n",
        }
    )
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "tracked.py", ".gitignore"], cwd=root, check=True)
    assert names(discover([root]), root) == ["tracked.py", "untracked.py"]


def test_explicit_file_and_duplicates(project):
    root = project({"a.py": "", "b.py": ""})
    found = discover([root / "a.py", root, root / "a.py"])
    assert names(found, root) == ["a.py", "b.py"]


def test_symlinks_never_lead_out_of_the_tree(project, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.py").write_text("import torch\n")
    root = project({"inner/a.py": ""})
    os.symlink(outside / "secret.py", root / "link_out.py")
    os.symlink(outside, root / "dir_out")
    os.symlink(root, root / "inner" / "loop")  # a directory loop
    os.symlink(root / "inner" / "a.py", root / "link_in.py")
    found = discover([root])
    assert names(found, root) == ["inner/a.py"]


def test_symlink_named_explicitly_is_migrated_at_its_target(project):
    root = project({"real.py": ""})
    os.symlink(root / "real.py", root / "alias.py")
    assert discover([root / "alias.py"]).files == [(root / "real.py").resolve()]


def test_missing_path_is_a_problem_not_a_crash(tmp_path):
    found = discover([tmp_path / "missing"])
    assert found.files == [] and "no such file" in found.problems[0][1]
