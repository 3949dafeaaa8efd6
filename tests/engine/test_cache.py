"""The on-disk result cache: same results on a hit, misses when anything that matters changes."""

from __future__ import annotations

from pathlib import Path

from migrate import engine
from migrate.cache import ResultCache
from migrate.engine import Selection, migrate_file
from tests.conftest import OLD_API

FINDING = "import torch\n\ns = torch.cuda.Stream()\n"
BROKEN = "import torch.cuda\n\ndef f(:\n    pass\n"


def essentials(result):
    return (
        result.new_text,
        result.changed,
        result.applied,
        result.findings,
        result.error,
        result.skipped,
    )


def test_hit_gives_identical_results_without_running_rules(project, tmp_path, monkeypatch):
    root = project(
        {
            "a.py": OLD_API,
            "b.py": FINDING,
            "c.py": BROKEN,
            "d.py": "import torch\n",
            "e.py": "import torch\ndef f(:\n",  # no rule may act, and broken
        }
    )
    selection = Selection.from_options()
    cache = ResultCache(tmp_path / "cache", selection)
    first = [migrate_file(root / f"{name}.py", selection, cache) for name in "abcde"]
    assert (tmp_path / "cache" / ".gitignore").read_text().endswith("*\n")

    def no_rules(*args):
        raise AssertionError("a cache hit must not run or even pick the rules")

    monkeypatch.setattr(engine, "run_pipeline", no_rules)
    monkeypatch.setattr(engine.cst, "parse_module", no_rules)
    monkeypatch.setattr(engine, "_rules_that_may_act", no_rules)
    monkeypatch.setattr(engine, "_python_syntax_error", no_rules)
    second = [migrate_file(root / f"{name}.py", selection, cache) for name in "abcde"]
    assert [essentials(r) for r in second] == [essentials(r) for r in first]
    assert first[0].changed and first[1].findings and first[2].error
    assert first[3].skipped and first[4].skipped and first[4].error


def test_changed_content_or_selection_misses(project, tmp_path):
    root = project({"a.py": OLD_API})
    everything = Selection.from_options()
    cache = ResultCache(tmp_path / "cache", everything)
    assert migrate_file(root / "a.py", everything, cache).changed
    (root / "a.py").write_text(OLD_API + "# edited\n")
    assert migrate_file(root / "a.py", everything, cache).new_text.endswith("# edited\n")
    without_105 = Selection.from_options(ignore=["TPU105"])
    other = ResultCache(tmp_path / "cache", without_105)
    assert not migrate_file(root / "a.py", without_105, other).changed


def test_corrupted_entries_are_ignored(project, tmp_path):
    root = project({"a.py": OLD_API})
    selection = Selection.from_options()
    cache = ResultCache(tmp_path / "cache", selection)
    expected = essentials(migrate_file(root / "a.py", selection, cache))
    entries = [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.name != ".gitignore"]
    assert len(entries) == 1
    for garbage in (b"", b"{not json", b'{"format": 1}', b"[1, 2]", b"\xff\xfe"):
        entries[0].write_bytes(garbage)
        assert essentials(migrate_file(root / "a.py", selection, cache)) == expected


def test_unwritable_cache_only_costs_speed(project, tmp_path):
    root = project({"a.py": OLD_API})
    (tmp_path / "file").write_text("")
    selection = Selection.from_options()
    cache = ResultCache(tmp_path / "file" / "cache", selection)  # cannot be created
    assert migrate_file(root / "a.py", selection, cache).changed


def test_prune_keeps_the_most_recent_entries(project, tmp_path):
    root = project({f"m{i}.py": OLD_API + f"x = {i}\n" for i in range(4)})
    selection = Selection.from_options()
    cache = ResultCache(tmp_path / "cache", selection)
    for i in range(4):
        migrate_file(root / f"m{i}.py", selection, cache)
    assert cache.prune(max_entries=2) == 2
    left = [
        p for p in Path(tmp_path / "cache").rglob("*") if p.is_file() and p.name != ".gitignore"
    ]
    assert len(left) == 2


def test_the_code_fingerprint_covers_the_rules_but_not_their_cases():
    """Every module of ``migrate`` and ``codemods`` decides results; the rules' cases, read by
    the tests only, are left out (three quarters of the files)."""
    from migrate import cache

    root = Path(cache.__file__).resolve().parents[1]
    rules = root / "codemods"
    hashed = set(cache._python_files(rules, skipped=rules / "cases"))
    assert rules / "_base.py" in hashed and rules / "tpu101_device_placement.py" in hashed
    assert set(rules.glob("*.py")) <= hashed
    cases = list((rules / "cases").rglob("*.py"))
    assert cases and not hashed.intersection(cases)
    assert set(cache._python_files(root / "migrate", skipped=rules / "cases")) == {
        path for path in (root / "migrate").rglob("*.py")
    }
