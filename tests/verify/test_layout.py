"""verify runs the user's project as the user runs it: same relative paths, local modules migrated
wherever they live, and nothing written into the user's tree (shadow.py, bootstrap sandbox.py)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from migrate.verify.runner import BOOTSTRAP_DIR
from migrate.verify.shadow import Shadow, project_root

TRAINER = textwrap.dedent("""\
    import torch


    def train(model, rows, steps):
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = model.to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        data = torch.tensor(rows)
        for step in range(steps):
            x = data.to(device)
            loss = (model(x) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return model
    """)

# Reads data two folders up, writes into a folder and over a file that exist in the user's tree.
SCRIPT = textwrap.dedent("""\
    import os
    import sys

    import torch
    import torch.nn as nn

    {path_edit}
    from mypkg.trainer import train

    torch.manual_seed(0)
    with open("../../data/values.txt") as handle:
        rows = [[float(v) for v in line.split()] for line in handle]
    model = train(nn.Linear(4, 2), rows, steps=6)
    with open("results/log.txt", "w") as log:
        log.write("done\\n")
    with open("results/keep.txt", "a") as kept:
        kept.write("appended by the run\\n")
    torch.save(model.state_dict(), "ckpt.pt")
    os.makedirs("samples", exist_ok=True)
    os.remove("results/old.txt")
    """)


def _project(tmp_path: Path, path_edit: str = "") -> Path:
    root = tmp_path / "proj"
    (root / "data").mkdir(parents=True)
    (root / "data/values.txt").write_text("0.5 1.5 -2.0 3.0\n1.0 0.25 0.75 -1.0\n")
    (root / "lib/mypkg").mkdir(parents=True)
    (root / "lib/mypkg/__init__.py").write_text("")
    (root / "lib/mypkg/trainer.py").write_text(TRAINER)
    exp = root / "projects/exp"
    (exp / "results").mkdir(parents=True)
    (exp / "results/keep.txt").write_text("kept\n")
    (exp / "results/old.txt").write_text("old\n")
    (exp / "ckpt.pt").write_text("an older checkpoint\n")
    (exp / "train.py").write_text(SCRIPT.format(path_edit=path_edit))
    return root


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    } | {str(p.relative_to(root)) + "/": "dir" for p in root.rglob("*") if p.is_dir()}


# -- the sandbox, without torch ----------------------------------------------------------------


def _in_sandbox(
    shadow: Shadow, protected: Path, cwd: Path, code: str
) -> subprocess.CompletedProcess:
    program = textwrap.dedent(f"""\
        import os, sys
        sys.path.insert(0, {str(BOOTSTRAP_DIR)!r})
        from _tpu_migrate_verify import sandbox
        sandbox.install({str(shadow.base)!r}, [{str(protected)!r}], True)
        os.chdir({str(shadow.path(cwd))!r})
        """) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
    )


def test_writes_stay_in_the_shadow_and_reads_see_the_users_files(tmp_path):
    root = _project(tmp_path)
    before = _snapshot(root)
    exp = root / "projects/exp"
    shadow = Shadow(tmp_path / "shadows/one")
    shadow.unshare(exp)
    proc = _in_sandbox(
        shadow,
        root,
        exp,
        f"""
        assert open("../../data/values.txt").read().startswith("0.5")
        open("results/log.txt", "w").write("new")
        open("results/keep.txt", "a").write("more")
        open("ckpt.pt", "w").write("replaced")
        os.makedirs("../../data/cache/deep", exist_ok=True)
        open("../../data/cache/deep/x.bin", "wb").write(b"1")
        os.remove("results/old.txt")
        os.rename("results/log.txt", "results/log2.txt")
        # an absolute path into the user's project lands in the shadow, and reads come back
        open({str(root / "data/abs.txt")!r}, "w").write("abs")
        assert open({str(root / "data/abs.txt")!r}).read() == "abs"
        assert os.path.exists({str(root / "data/abs.txt")!r})
        print(open("results/keep.txt").read())
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "kept\nmore"
    assert _snapshot(root) == before
    placed = shadow.path(exp)
    assert (placed / "results/log2.txt").read_text() == "new"
    assert not (placed / "results/old.txt").exists()
    assert (placed / "ckpt.pt").read_text() == "replaced"
    assert (shadow.path(root) / "data/cache/deep/x.bin").read_bytes() == b"1"
    assert (shadow.path(root) / "data/values.txt").is_symlink()  # read where it is, not copied


def test_paths_outside_the_project_are_left_alone(tmp_path):
    root = _project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shadow = Shadow(tmp_path / "shadows/one")
    shadow.unshare(root / "projects/exp")
    proc = _in_sandbox(
        shadow, root, root / "projects/exp", f"open({str(elsewhere / 'out.txt')!r}, 'w').write('x')"
    )
    assert proc.returncode == 0, proc.stderr
    assert (elsewhere / "out.txt").read_text() == "x"


def test_verify_s_own_folder_is_never_taken_into_the_shadow(tmp_path):
    """A protected folder that also holds verify's folder (a project root of /tmp with the
    traces in /tmp/tpu-migrate-verify-*): the run's trace writes go where verify reads them."""
    root = _project(tmp_path)
    shadow = Shadow(tmp_path / "verify-work/shadow-original")
    shadow.unshare(root / "projects/exp")
    traces = tmp_path / "verify-work/trace-original"
    traces.mkdir()
    proc = _in_sandbox(
        shadow, tmp_path, root / "projects/exp", f"open({str(traces / 't.json')!r}, 'w').write('x')"
    )
    assert proc.returncode == 0, proc.stderr
    assert (traces / "t.json").read_text() == "x"


def test_project_root_is_never_widened_to_the_temporary_folder(tmp_path):
    root = _project(tmp_path)
    script = root / "projects/exp/train.py"
    elsewhere = Path(tempfile.mkdtemp())  # directly in the temporary folder, beside tmp_path's
    try:
        found, notes = project_root(script, elsewhere, [])
    finally:
        elsewhere.rmdir()
    assert found == script.parent and "not taken into the project root" in notes[1]


def test_project_root_takes_the_working_directory_and_pythonpath(tmp_path):
    root = _project(tmp_path)
    script = root / "projects/exp/train.py"
    assert project_root(script, script.parent, [])[0] == script.parent
    assert project_root(script, script.parent, [root / "lib"])[0] == root
    assert project_root(script, root, [])[0] == root
    found, notes = project_root(script, Path("/"), [])
    assert found == script.parent and "not taken into the project root" in notes[1]


# -- end to end on XLA:CPU ---------------------------------------------------------------------


@pytest.mark.xla
@pytest.mark.usefixtures("xla_available")
@pytest.mark.parametrize("reach", ["pythonpath", "sys_path_edit"])
def test_a_package_reached_through_the_path_is_migrated_and_the_tree_left_alone(
    verify_cli, tmp_path, monkeypatch, reach
):
    if reach == "pythonpath":
        root = _project(tmp_path)
        monkeypatch.setenv("PYTHONPATH", str(root / "lib"))
    else:  # an absolute sys.path entry outside the root verify picks (the script's folder)
        root = _project(tmp_path, path_edit=f"sys.path.insert(0, {str(tmp_path / 'proj/lib')!r})")
        monkeypatch.delenv("PYTHONPATH", raising=False)
    exp = root / "projects/exp"
    monkeypatch.chdir(exp)
    before = _snapshot(root)
    outcome = verify_cli(str(exp / "train.py"), "--steps", "4")
    assert outcome.code == 0, outcome.out + outcome.err
    result = outcome.result
    assert result["verdict"] == "equivalent"
    assert result["hygiene"]["compilations"] >= 1
    notes = "\n".join(result["notes"])
    assert "trainer.py (TPU101" in notes
    if reach == "sys_path_edit":
        assert "the migrated run imported mypkg" in notes and "ran again" in notes
    assert _snapshot(root) == before


@pytest.mark.xla
@pytest.mark.usefixtures("xla_available")
def test_a_migrated_run_that_stays_on_the_cpu_is_not_on_xla(verify_cli, tmp_path, monkeypatch):
    root = _project(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(root / "lib"))
    exp = root / "projects/exp"
    monkeypatch.chdir(exp)
    stays = exp / "train_xla.py"
    stays.write_text("import torch_xla\n" + (exp / "train.py").read_text())
    outcome = verify_cli(str(exp / "train.py"), "--migrated", str(stays), "--steps", "4")
    assert outcome.code == 4, outcome.out + outcome.err
    assert outcome.result["verdict"] == "not-on-xla"
    reason = outcome.result["reason"]
    assert "the optimizer built at trainer.py:7 holds cpu tensors" in reason
    assert "the model went to cpu at trainer.py:6" in reason
