"""The per-file pipeline: parse once, rules in order, imports once, nothing lost."""

from __future__ import annotations

import codecs
import gc
import multiprocessing
import os
import signal
import stat
import time

import libcst as cst
import pytest

import codemods
from codemods._base import Safety, TpuCodemod
from migrate import engine
from migrate.engine import Selection, migrate_file, migrate_files
from migrate.source import write_atomically
from tests.conftest import NEW_API, OLD_API

ALL = Selection.from_options()


def test_rewrites_and_reports_applied_rules(project):
    root = project({"train.py": OLD_API})
    result = migrate_file(root / "train.py", ALL)
    assert result.error is None
    assert result.new_text == NEW_API
    assert result.applied == {"TPU105": 2}


HOGWILD = (
    "import torch\n"
    "import torch.multiprocessing as mp\n\n"
    "model = Net().cuda()\n"
    "model.share_memory()\n"
    "for rank in range(2):\n"
    "    mp.Process(target=train, args=(rank, model)).start()\n"
)


def test_a_file_a_rule_keeps_off_xla_is_left_to_its_finding(project):
    """TPU120 reports Hogwild training; the rules after it (TPU127 would rewrite .cuda()) leave
    the file alone: the finding's marker is the only change."""
    root = project({"main.py": HOGWILD, "other.py": "import torch\n\nx = torch.ones(2).cuda()\n"})
    hogwild, other = migrate_files([root / "main.py", root / "other.py"], ALL, jobs=1)
    assert [f.code for f in hogwild.findings] == ["TPU291"]
    assert hogwild.applied == {}
    added = set(hogwild.new_text.splitlines()) - set(HOGWILD.splitlines())
    assert len(added) == 1 and added.pop().lstrip().startswith("# TODO(tpu-migrate): TPU291")
    assert "TPU127" in other.applied  # the next file is migrated as usual


def test_file_without_torch_is_not_parsed(project):
    root = project({"util.py": "def f(:\n"})  # would not even parse
    result = migrate_file(root / "util.py", ALL)
    assert result.skipped and result.error is None and not result.changed


def test_syntax_error_is_reported_with_line(project):
    root = project({"bad.py": "import torch.cuda\n\ndef f(:\n    pass\n"})
    result = migrate_file(root / "bad.py", ALL)
    assert result.error.startswith("syntax error")
    assert result.error_line == 3
    assert result.new_text is None


@pytest.mark.parametrize(
    "name, raw",
    [
        ("crlf.py", OLD_API.replace("\n", "\r\n").encode()),
        ("bom.py", codecs.BOM_UTF8 + OLD_API.encode()),
        (
            "latin1.py",
            ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + OLD_API).encode("latin-1"),
        ),
    ],
)
def test_encoding_bom_and_newlines_survive(project, name, raw):
    root = project({name: raw})
    result = migrate_file(root / name, ALL)
    new = result.new_bytes()
    assert new.startswith(codecs.BOM_UTF8) == raw.startswith(codecs.BOM_UTF8)
    if b"\r\n" in raw:
        assert new.count(b"\r\n") == new.count(b"\n")
    if name == "latin1.py":
        assert "caf\xe9".encode("latin-1") in new
    assert b"torch_xla.sync()" in new


def test_untouched_lines_stay_byte_identical(project):
    source = "import torch   # odd  spacing kept\nimport torch_xla.core.xla_model as xm\nx = ( 1 ,2 )\nxm.mark_step()\n"
    root = project({"t.py": source})
    new = migrate_file(root / "t.py", ALL).new_text
    assert new.splitlines()[0] == "import torch   # odd  spacing kept"
    assert "x = ( 1 ,2 )" in new.splitlines()


def test_undecodable_file_is_reported(project):
    root = project({"bad_bytes.py": b"import torch\nx = '\xff\xfe'\n"})
    result = migrate_file(root / "bad_bytes.py", ALL)
    assert "cannot decode" in result.error and result.error_line == 2


def test_binary_file_is_reported(project):
    root = project({"blob.py": b"torch\x00\x01\x02"})
    assert "binary" in migrate_file(root / "blob.py", ALL).error


class _Exploding(TpuCodemod):
    """What it does / Why / Example: a rule that fails, for the engine's error path."""

    CODE, NAME, SUMMARY, SAFETY = "TPU199", "exploding", "fails", Safety.SAFE

    def leave_Name(self, original_node, updated_node):
        raise ValueError("boom")


class _Breaking(TpuCodemod):
    """What it does / Why / Example: a rule whose output does not compile."""

    CODE, NAME, SUMMARY, SAFETY = "TPU198", "breaking", "breaks", Safety.SAFE

    def leave_Module(self, original_node, updated_node):
        self.record_rewrite()
        ret = cst.SimpleStatementLine([cst.Return(cst.Integer("1"))])
        return updated_node.with_changes(body=[*updated_node.body, ret])


@pytest.mark.parametrize(
    "rule, expected",
    [
        (_Exploding, "internal error in rule TPU199: ValueError: boom"),
        (_Breaking, "TPU198: output would not compile"),
    ],
)
def test_failing_rule_leaves_file_alone_and_is_named(project, monkeypatch, rule, expected):
    monkeypatch.setattr(codemods, "PIPELINE", (rule,))
    root = project({"t.py": OLD_API})
    result = migrate_file(root / "t.py", Selection((rule.CODE,)))
    assert expected in result.error
    assert result.new_text is None


class _Marking(TpuCodemod):
    """What it does / Why / Example: a rule that adds a comment, for the engine's error path."""

    CODE, NAME, SUMMARY, SAFETY = "TPU197", "marking", "marks", Safety.SAFE

    def leave_Module(self, original_node, updated_node):
        self.record_rewrite()
        return updated_node.with_changes(footer=[cst.EmptyLine(comment=cst.Comment("# seen"))])


@pytest.mark.parametrize("later", [_Exploding, _Marking])
def test_the_first_rule_whose_output_does_not_compile_is_named(project, monkeypatch, later):
    """Only the final code is compiled; when it fails, or a later rule fails on the broken
    tree, the rule named is the first whose output does not compile."""
    monkeypatch.setattr(codemods, "PIPELINE", (_Marking, _Breaking, later))
    root = project({"t.py": OLD_API})
    codes = (_Marking.CODE, _Breaking.CODE, later.CODE)
    result = migrate_file(root / "t.py", Selection(codes))
    assert result.error.startswith("internal error in rule TPU198: output would not compile")
    assert result.error_line == len(OLD_API.splitlines()) + 1
    assert result.new_text is None


@pytest.fixture
def pool_for_any_size(monkeypatch):
    """Runs of more than one job use worker processes however small their files are."""
    monkeypatch.setattr(engine, "IN_PROCESS_BELOW_BYTES", 0)


def test_parallel_run_gives_the_same_results(project, pool_for_any_size):
    files = {f"m{i}.py": OLD_API if i % 2 else "print('no torch here')\n" for i in range(8)}
    root = project(files)
    paths = sorted(root.glob("*.py"))
    serial = [(r.path, r.new_text, r.applied) for r in migrate_files(paths, ALL, jobs=1)]
    parallel = [(r.path, r.new_text, r.applied) for r in migrate_files(paths, ALL, jobs=2)]
    assert [path for path, _, _ in serial] == paths
    assert serial == sorted(parallel)


def _no_pool(*args, **kwargs):
    raise AssertionError("a worker process was started")


def test_small_runs_stay_in_this_process_whatever_the_jobs(project, monkeypatch):
    """Below ``IN_PROCESS_BELOW_BYTES`` starting workers costs more than it saves: the files
    are migrated here, in order, and at that size and above a pool is started."""
    import concurrent.futures

    files = {f"m{i}.py": OLD_API for i in range(4)}
    root = project(files)
    paths = sorted(root.glob("*.py"))
    total = sum(path.stat().st_size for path in paths)
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", _no_pool)
    monkeypatch.setattr(engine, "IN_PROCESS_BELOW_BYTES", total + 1)
    results = list(migrate_files(paths, ALL, jobs=2))
    assert [r.path for r in results] == paths and all(r.changed for r in results)
    monkeypatch.setattr(engine, "IN_PROCESS_BELOW_BYTES", total)
    with pytest.raises(AssertionError, match="a worker process was started"):
        list(migrate_files(paths, ALL, jobs=2))


def test_the_largest_files_are_started_first_in_small_batches(tmp_path):
    sizes = [5, 700, 40, 40, 9000, 0, 123, 64_000, 1, 2, 3] + [10] * 40
    paths = []
    for i, size in enumerate(sizes):
        paths.append(tmp_path / f"m{i:02}.py")
        paths[-1].write_text("x" * size)
    paths.append(tmp_path / "gone.py")  # vanished before the run: sized 0, reported by the run
    batches = engine._largest_first_batches({path: engine._size(path) for path in paths}, jobs=2)
    in_order = [path for batch in batches for path in batch]
    assert sorted(in_order) == sorted(paths)
    assert [p.stat().st_size if p.exists() else 0 for p in in_order] == sorted(
        sizes + [0], reverse=True
    )
    assert batches[0] == [tmp_path / "m07.py"]  # alone: it is a whole budget by itself
    assert all(1 <= len(batch) <= 16 for batch in batches)


def test_atomic_write_keeps_permissions(tmp_path):
    path = tmp_path / "x.py"
    path.write_text("old\n")
    os.chmod(path, 0o751)
    write_atomically(path, b"new\n")
    assert path.read_bytes() == b"new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert [p.name for p in tmp_path.iterdir()] == ["x.py"]  # no temp file left behind


def test_ignore_finding_code_and_select_prefix():
    assert Selection.from_options(["TPU105"]).rule_codes == ("TPU105",)
    assert "TPU105" not in Selection.from_options(ignore=["TPU105"]).rule_codes
    assert set(Selection.from_options(["TPU1"]).rule_codes) == {r.CODE for r in codemods.PIPELINE}
    with pytest.raises(KeyError):
        Selection.from_options(["TPU999"])


def test_long_new_lines_are_laid_out_like_black_and_old_ones_stay(project):
    source = (
        "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "untouched = [1,2,3]   # keep my spacing\n"
        "if __name__ == '__main__':\n"
        "    xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS.num_cores, start_method='fork')\n"
    )
    root = project({"t.py": source})
    new = migrate_file(root / "t.py", ALL).new_text
    assert new == (
        "import torch_xla\n\n"
        "untouched = [1,2,3]   # keep my spacing\n"
        "if __name__ == '__main__':\n"
        "    torch_xla.launch(\n"
        "        _mp_fn,\n"
        "        args=(FLAGS,),\n"
        "        start_method='fork',\n"
        "        debug_single_process=FLAGS.num_cores == 1,\n"
        "    )\n"
    )


def test_continuation_lines_aligned_under_a_moved_bracket_follow_it(project):
    source = (
        "import torch\n\n"
        "def save(model, opt, path):\n"
        "    torch.save({'model': model.state_dict(),\n"
        "                'opt': opt.state_dict()}, path)\n"
        "    torch.save(model.state_dict(),\n"
        "        path)  # hanging indent: not aligned, left alone\n"
    )
    root = project({"t.py": source})
    new = migrate_file(root / "t.py", ALL).new_text
    assert (
        "    xm.save({'model': model.state_dict(),\n             'opt': opt.state_dict()}, path)\n"
        in new
    )
    assert "    xm.save(model.state_dict(),\n        path)  # hanging" in new


def test_file_no_selected_rule_can_act_on_is_not_parsed(project, monkeypatch):
    def no_libcst(*args, **kwargs):
        raise AssertionError("parsed with libcst")

    monkeypatch.setattr("migrate.engine.cst.parse_module", no_libcst)
    root = project({"t.py": "import torch\n\nx = 1\n", "b.py": "import torch\n\ndef f(:\n"})
    result = migrate_file(root / "t.py", ALL)  # mentions torch, triggers no rule
    assert result.skipped and result.error is None
    broken = migrate_file(root / "b.py", ALL)  # still reported: Python's own parser tells
    assert broken.skipped and (broken.error, broken.error_line) == (
        "syntax error: invalid syntax",
        3,
    )
    monkeypatch.undo()
    # Python's parser read it to pick the rules, so its syntax is not checked a second time
    monkeypatch.setattr("migrate.engine._python_syntax_error", no_libcst)
    root = project({"w.py": "import torch\n\ndef f(table, key):\n    table[key] = 1\n"})
    assert migrate_file(root / "w.py", ALL).skipped
    monkeypatch.undo()
    cuda_only = Selection.from_options(["TPU101"])
    root = project({"u.py": "import torch\nx = torch.cuda\ndef f(:\n"})
    assert migrate_file(root / "u.py", cuda_only).error.startswith("syntax error")
    assert migrate_file(root / "u.py", Selection.from_options(["TPU105"])).skipped


def test_a_file_only_the_step_boundary_makes_xla_is_seeded_on_the_first_run(project):
    # Found on torch's _inductor/fx_passes/numeric_utils.py: TPU110 seeds only files that use
    # torch_xla; it ran before TPU102 made this one use it, so the second run added the seed.
    source = (
        "import torch\n\n\n"
        "def set_deterministic():\n"
        "    torch.manual_seed(1337)\n\n\n"
        "def run(model, optimizer, batch):\n"
        "    loss = model(batch).sum()\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
    )
    root = project({"t.py": source})
    first = migrate_file(root / "t.py", ALL)
    assert "    torch.manual_seed(1337)\n    torch_xla.manual_seed(1337)\n" in first.new_text
    assert "xm.optimizer_step(optimizer)" in first.new_text
    (root / "t.py").write_text(first.new_text, encoding="utf-8")
    second = migrate_file(root / "t.py", ALL)
    assert second.new_text == first.new_text and second.applied == {}


@pytest.mark.parametrize("enabled", [True, False])
def test_the_cycle_collector_is_left_as_it_was_found(project, enabled):
    """The engine pauses Python's cycle collector while it migrates a file: afterwards it is
    running again if it was, and still off if the caller had turned it off."""
    root = project({"train.py": OLD_API})
    was_enabled = gc.isenabled()
    if not enabled:
        gc.disable()
    try:
        result = migrate_file(root / "train.py", ALL)
        assert result.changed and result.error is None
        assert gc.isenabled() is enabled
    finally:
        if was_enabled:
            gc.enable()


def _slow_migration(path, selection, cache=None):
    started = path.parent / f"{path.name}.started"
    started.with_suffix(".tmp").write_text(str(os.getpid()))
    started.with_suffix(".tmp").replace(started)  # appears with the pid in it
    time.sleep(30)
    (path.parent / f"{path.name}.finished").write_text("")


@pytest.mark.skipif(
    multiprocessing.get_start_method() != "fork", reason="the workers must inherit the stand-in"
)
def test_ctrl_c_stops_busy_workers_instead_of_waiting_for_them(
    tmp_path, monkeypatch, pool_for_any_size
):
    paths = [tmp_path / f"m{i}.py" for i in range(4)]
    for path in paths:
        path.write_text(OLD_API)
    monkeypatch.setattr(engine, "migrate_file", _slow_migration)

    def interrupt_once_a_worker_is_busy(signum, frame):
        if list(tmp_path.glob("*.started")):
            signal.setitimer(signal.ITIMER_REAL, 0)
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt_once_a_worker_is_busy)
    try:
        results = migrate_files(paths, ALL, jobs=2)
        # (looks every 50 ms: a fixed delay could come before any worker had started)
        signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
        with pytest.raises(KeyboardInterrupt):
            next(results)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    started = list(tmp_path.glob("*.started"))
    assert started  # the workers were busy...
    for marker in started:  # ...and are gone, stopped rather than waited for
        with pytest.raises(ProcessLookupError):
            os.kill(int(marker.read_text()), 0)
    assert not list(tmp_path.glob("*.finished"))
