"""Every rule over real Python nobody here wrote: the torch package's own source and the stdlib.

A deterministic sample runs in CI (every file that mentions ``.cuda``, ``torch.distributed`` or
``autocast`` is the most interesting, so the sample leans on them); ``TPU_MIGRATE_SWEEP=full``
sweeps every file, and ``bench/speed.py`` sweeps the whole torch tree with the CLI. The counts are
printed (``pytest -s``) and always in the assertion message.
"""

from __future__ import annotations

import os
import shutil
import sysconfig
from collections import Counter
from pathlib import Path

import pytest

from migrate.engine import Selection, default_jobs, migrate_files

pytestmark = pytest.mark.slow  # a sample of the torch sources and the stdlib

INTERESTING = (".cuda", "torch.distributed", "autocast")
FULL = os.environ.get("TPU_MIGRATE_SWEEP") == "full"
# Sample sizes chosen for about 1-2 minutes on 2 cores (the parsed torch files dominate).
TORCH_INTERESTING_SAMPLE, TORCH_OTHER_SAMPLE, STDLIB_SAMPLE = 8, 6, 200
# What a clean refusal of a file looks like (the stdlib ships deliberately broken test files).
CLEAN_ERRORS = ("syntax error", "cannot parse", "cannot decode", "bad encoding", "binary file")


def _python_files(tree: Path) -> list[Path]:
    return sorted(p for p in tree.rglob("*.py") if p.is_file() and not p.is_symlink())


def _every(files: list[Path], count: int) -> list[Path]:
    return files if FULL or len(files) <= count else files[:: len(files) // count][:count]


def _torch_sample() -> tuple[Path, list[Path]]:
    torch = pytest.importorskip("torch")
    tree = Path(torch.__file__).parent
    files = _python_files(tree)
    texts = {p: p.read_bytes() for p in files}
    interesting = [p for p in files if any(w.encode() in texts[p] for w in INTERESTING)]
    other = [p for p in files if p not in set(interesting)]
    return tree, _every(interesting, TORCH_INTERESTING_SAMPLE) + _every(other, TORCH_OTHER_SAMPLE)


def _stdlib_sample() -> tuple[Path, list[Path]]:
    tree = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in _python_files(tree) if "site-packages" not in p.parts]
    return tree, _every(files, STDLIB_SAMPLE)


def copy_sample(tree: Path, files: list[Path], destination: Path) -> list[Path]:
    """Copies of ``files`` (under ``tree``) at the same relative paths under ``destination``."""
    copies = []
    for path in files:
        copy = destination / path.relative_to(tree)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
        copies.append(copy)
    return copies


@pytest.mark.parametrize("corpus", ["torch", "stdlib"])
def test_every_rule_over_real_code(corpus, tmp_path):
    tree, sample = _torch_sample() if corpus == "torch" else _stdlib_sample()
    copies = copy_sample(tree, sample, tmp_path)
    selection = Selection.from_options()
    counts, problems, rewritten = Counter(files=len(copies)), [], []
    for result in migrate_files(copies, selection, default_jobs()):
        counts["findings"] += len(result.findings)
        raw = result.path.read_bytes()
        if result.error:
            counts["errors"] += 1
            if not result.error.startswith(CLEAN_ERRORS):
                problems.append(f"{result.path}:{result.error_line}: {result.error}")
            continue
        if not result.changed:
            continue
        counts["changed"] += 1
        if b"torch" not in raw:
            problems.append(f"{result.path}: changed but does not use torch")
        try:
            compile(result.new_text, str(result.path), "exec", dont_inherit=True)
        except SyntaxError as exc:
            problems.append(f"{result.path}: output does not compile: {exc}")
            continue
        result.path.write_bytes(result.new_bytes())
        rewritten.append(result.path)
    for again in migrate_files(rewritten, selection, default_jobs()):
        if again.error or again.changed:
            problems.append(f"{again.path}: second run not a no-op: {again.error or 'changed'}")
    summary = f"{corpus} sweep: " + ", ".join(
        f"{counts[k]} {k}" for k in ("files", "changed", "findings", "errors")
    )
    print(summary)
    assert not problems, summary + "\n" + "\n".join(problems)
