"""Odd and hostile inputs: each gives one clear line naming the file, the rest is processed, and
the exit code says so (2 when some file could not be processed or written)."""

from __future__ import annotations

import os
import stat

import pytest

from migrate import commands
from migrate.cli import main
from tests.conftest import NEW_API, OLD_API


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def apply(capsys, root, *extra):
    return run(capsys, "apply", "-j", "1", *extra, str(root))


@pytest.mark.parametrize(
    "name, raw, message",
    [
        ("syntax.py", b"import torch.cuda\nif True\n", "syntax.py:2: syntax error"),
        ("bytes.py", b"import torch.cuda\nx = '\xff'\n", "bytes.py:2: cannot decode as utf-8"),
        ("blob.py", b"\x7fELF\x00\x01torch.cuda", "blob.py:1: binary file"),
        ("enc.py", b"# -*- coding: klingon -*-\nimport torch\n", "enc.py:1: bad encoding"),
    ],
)
def test_bad_file_is_one_line_and_the_rest_is_migrated(project, capsys, name, raw, message):
    root = project({name: raw, "good.py": OLD_API})
    code, out, err = apply(capsys, root)
    assert code == 2
    assert (root / "good.py").read_text() == NEW_API
    assert (root / name).read_bytes() == raw
    lines = [line for line in err.splitlines() if name in line]
    assert len(lines) == 1 and message in lines[0], err


@pytest.mark.parametrize(
    "name, raw",
    [
        ("empty.py", b""),
        ("tabs.py", b"import torch_xla.core.xla_model as xm\nif True:\n\txm.mark_step()\n"),
        ("mixed.py", b"import torch_xla.core.xla_model as xm\r\nx = 1\nxm.mark_step()\r\n"),
        ("crlf.py", OLD_API.replace("\n", "\r\n").encode()),
        ("bom.py", b"\xef\xbb\xbf" + OLD_API.encode()),
        ("latin.py", b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + OLD_API.encode()),
        ("nonl.py", OLD_API.rstrip("\n").encode()),
    ],
)
def test_odd_but_valid_files_are_migrated_and_idempotent(project, capsys, name, raw):
    root = project({name: raw})
    code, _, err = apply(capsys, root)
    assert code == 0, err
    new = (root / name).read_bytes()
    if raw:
        assert b"torch_xla.sync()" in new and b"mark_step" not in new
    else:
        assert new == b""
    if b"\t" in raw:
        assert b"\n\ttorch_xla.sync()" in new
    if raw.startswith(b"\xef\xbb\xbf"):
        assert new.startswith(b"\xef\xbb\xbf") and new.count(b"\xef\xbb\xbf") == 1
    if b"\r\n" in raw and b"x = 1\n" not in raw:
        assert new.count(b"\r\n") == new.count(b"\n")
    if b"caf\xe9" in raw:
        assert b"caf\xe9" in new
    assert apply(capsys, root)[0] == 0 and (root / name).read_bytes() == new


def test_ten_megabyte_file(project, capsys):
    filler = "".join(
        f"# line {i} of generated data, padded to a realistic width....\n" for i in range(160_000)
    )
    big = OLD_API + "DATA = '''\n" + filler + "'''\n"  # one token: parsing stays cheap
    assert len(big) > 10_000_000
    root = project({"big.py": big, "big_no_torch.py": filler})
    code, out, err = apply(capsys, root)
    assert code == 0, err
    assert (root / "big.py").read_text() == NEW_API + big[len(OLD_API) :]
    assert (root / "big_no_torch.py").read_text() == filler


def test_paths_with_spaces_and_non_ascii_names(project, capsys):
    root = project({"my project/trainé ü.py": OLD_API, "données/модель.py": OLD_API})
    code, out, err = apply(capsys, root)
    assert code == 0, err
    assert (root / "my project/trainé ü.py").read_text() == NEW_API
    assert (root / "données/модель.py").read_text() == NEW_API
    assert "trainé ü.py: TPU105 x2" in out and "модель.py: TPU105 x2" in out


def test_symlinks_are_not_followed_out_of_the_tree_or_into_loops(project, capsys, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "theirs.py").write_text(OLD_API)
    root = project({"pkg/mine.py": OLD_API})
    os.symlink(outside / "theirs.py", root / "pkg" / "link.py")
    os.symlink(outside, root / "outside_dir")
    os.symlink(root, root / "pkg" / "loop")
    code, _, err = apply(capsys, root)
    assert code == 0, err
    assert (root / "pkg/mine.py").read_text() == NEW_API
    assert (outside / "theirs.py").read_text() == OLD_API
    assert (root / "pkg" / "link.py").is_symlink()


def test_unreadable_file(project, capsys):
    root = project({"secret.py": OLD_API, "good.py": OLD_API})
    os.chmod(root / "secret.py", 0)
    try:
        if os.access(root / "secret.py", os.R_OK):
            pytest.skip("running as root: chmod 000 does not stop reads here")
        code, _, err = apply(capsys, root)
    finally:
        os.chmod(root / "secret.py", 0o644)
    assert code == 2
    assert "secret.py:1: cannot read: Permission denied" in err
    assert (root / "good.py").read_text() == NEW_API


def test_read_only_file_is_not_written_and_says_so(project, capsys):
    root = project({"locked.py": OLD_API, "good.py": OLD_API})
    os.chmod(root / "locked.py", 0o444)
    code, _, err = apply(capsys, root)
    assert code == 2
    assert "locked.py:1: not written: the file is read-only" in err
    assert (root / "locked.py").read_text() == OLD_API
    assert stat.S_IMODE((root / "locked.py").stat().st_mode) == 0o444
    assert (root / "good.py").read_text() == NEW_API


def test_file_that_vanishes_during_the_run(project, capsys, monkeypatch):
    root = project({"a.py": OLD_API, "gone.py": OLD_API, "z.py": OLD_API})
    real_discover = commands.discover

    def discover_then_delete(*args, **kwargs):
        found = real_discover(*args, **kwargs)
        (root / "gone.py").unlink()
        return found

    monkeypatch.setattr(commands, "discover", discover_then_delete)
    code, _, err = apply(capsys, root)
    assert code == 2
    assert "gone.py:1: cannot read: No such file or directory" in err
    assert (root / "a.py").read_text() == NEW_API == (root / "z.py").read_text()
    assert not (root / "gone.py").exists()


def test_file_changed_on_disk_before_the_write_is_left_alone(project, capsys, monkeypatch):
    root = project({"a.py": OLD_API})
    real = commands.migrate_files

    def migrate_then_edit(*args, **kwargs):
        for result in real(*args, **kwargs):
            (root / "a.py").write_text(OLD_API + "# edited meanwhile\n")
            yield result

    monkeypatch.setattr(commands, "migrate_files", migrate_then_edit)
    code, _, err = apply(capsys, root)
    assert code == 2 and "a.py:1: not written: the file changed on disk" in err
    assert (root / "a.py").read_text().endswith("# edited meanwhile\n")
