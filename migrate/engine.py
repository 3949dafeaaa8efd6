"""Per-file pipeline: parse once, run the selected rules in order, fix imports once, re-check.

The engine knows rules only through the registry in ``codemods``: it never names one.
"""

from __future__ import annotations

import ast
import dataclasses
import gc
import os
import signal
import traceback
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Mapping, Sequence

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

import codemods
from codemods._base import (
    ADJUSTMENTS_KEY,
    DISABLED_FINDINGS_KEY,
    FINDINGS_KEY,
    HAS_SUPPRESSIONS_KEY,
    MARKER_PREFIX,
    OFF_XLA_KEY,
    OPTIONS_KEY,
    REWRITES_KEY,
    SUPPRESSION_PATTERN,
    USED_SUPPRESSIONS_KEY,
    Finding,
    VerifyAdjustment,
    tidy_torch_xla_imports,
)
from migrate.fastcst import plain_libcst
from migrate.fastcst.codegen import module_code
from migrate.fastcst.facts import FileFacts

from .layout import realign_continuation_lines, wrap_long_new_lines
from .cache import ResultCache
from .fastcst.imports import visitors_set_up_faster, with_imports_added, with_imports_removed
from .linemap import LineMap
from .fastcst.metadata import SharedMetadata, StockMetadata, shared_metadata
from .source import SourceError, SourceFile
from .suppressions import UnusedSuppression, unused_suppressions

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

# A file that never mentions torch cannot need a rewrite; not parsing it is most of the speed.
PREFILTER_WORDS = ("torch",)


@dataclass
class FileResult:
    path: Path
    source: SourceFile | None = None
    new_text: str | None = None  # None: unchanged (or not processed)
    applied: dict[str, int] = field(default_factory=dict)  # rule code -> number of edits
    findings: list[Finding] = field(default_factory=list)
    # what `verify` must repeat in the original run; lines are the user's (before migration)
    adjustments: list[VerifyAdjustment] = field(default_factory=list)
    error: str | None = None  # "path:line: message" form is made by the renderers
    error_line: int = 1
    skipped: bool = False  # pre-filter said the file cannot need a rewrite
    # rule code -> (first, last) user's lines of each block of lines the rule rewrote
    rewrite_regions: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    unused_suppressions: list[UnusedSuppression] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return (
            self.new_text is not None
            and self.source is not None
            and self.new_text != self.source.text
        )

    def cell_of(self, line: int) -> tuple[int, int] | None:
        """(cell number from 1, line in the cell) of a line of a notebook's program; None for
        a plain file."""
        if self.source is None or self.source.notebook is None:
            return None
        return self.source.notebook.location(line)

    def new_bytes(self) -> bytes:
        assert self.source is not None and self.new_text is not None
        return self.source.encode(self.new_text)


RuleOptions = tuple[tuple[str, tuple[tuple[str, object], ...]], ...]  # hashable form


@dataclass(frozen=True)
class Selection:
    """Which rules run, which finding codes are silenced and the rules' configured options;
    picklable for worker processes."""

    rule_codes: tuple[str, ...]
    disabled_findings: frozenset[str] = frozenset()
    options: RuleOptions = ()  # ((rule code, ((option, value), ...)), ...); lists as tuples

    @classmethod
    def from_options(
        cls,
        select: Sequence[str] = (),
        ignore: Sequence[str] = (),
        options: Mapping[str, Mapping[str, object]] | None = None,
    ) -> "Selection":
        rules = codemods.select_rules(select, ignore)
        disabled = frozenset(
            code
            for rule in rules
            for code in rule.FINDINGS
            if not codemods.code_selected(code, select, ignore)
        )
        # (an old code that was split gives its options to its parts: codemods/_aliases.py)
        frozen = tuple(
            (code, tuple(sorted((name, _frozen(v)) for name, v in values.items())))
            for code, values in sorted(codemods.options_by_rule(options).items())
        )
        return cls(tuple(rule.CODE for rule in rules), disabled, frozen)

    def rules(self) -> list[type]:
        return [codemods.rule_by_code(code) for code in self.rule_codes]

    def rule_options(self) -> dict[str, dict[str, object]]:
        """What rules read through ``TpuCodemod.option``: rule code -> {option: value}."""
        return {code: dict(values) for code, values in self.options}

    def active_codes(self) -> set[str]:
        """The rule codes that run and the finding codes they may report."""
        codes = set(self.rule_codes)
        for rule in self.rules():
            codes.update(code for code in rule.FINDINGS if code not in self.disabled_findings)
        return codes


def _frozen(value: object) -> object:
    return tuple(_frozen(item) for item in value) if isinstance(value, list) else value


@dataclass
class PipelineDetails:
    """What a pipeline run tells besides its output: where each rule rewrote, in the user's
    lines, and the suppressions that hid something ((line, code as written))."""

    rewrite_regions: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    used_suppressions: set[tuple[int, str]] = field(default_factory=set)
    # what `verify` must repeat in the original run, in the user's lines
    adjustments: list[VerifyAdjustment] = field(default_factory=list)


class RuleFailure(Exception):
    def __init__(self, code: str, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.code = code
        self.line = line


def migrate_file(path: Path, selection: Selection, cache: ResultCache | None = None) -> FileResult:
    """Run the pipeline on one file. Never raises for a problem in the file: it is in the result."""
    result = FileResult(path=path)
    try:
        source = SourceFile.read(path)
    except SourceError as exc:
        result.error, result.error_line = str(exc), exc.line
        return result
    result.source = source
    mentions_torch = _passes_prefilter(source.text)
    has_suppressions = SUPPRESSION_PATTERN.search(source.text) is not None
    if not mentions_torch and not has_suppressions:
        result.skipped = True
        return result
    # Looked up before the rules are picked: picking them parses the file with Python's parser,
    # most of what a re-check of an unchanged file would otherwise cost.
    key = cache.key(path, source.raw) if cache is not None else None
    stored = cache.load(key) if key is not None else None
    if stored is not None:
        try:
            _restore(result, stored)
            return result
        except (KeyError, TypeError, ValueError, AttributeError):  # an entry of another shape
            result = FileResult(path=path, source=source)
    rules, parsed = _rules_that_may_act(source.text, selection) if mentions_torch else ([], False)
    if not rules and not has_suppressions:
        # (a file with suppressions is still run: the unused ones are reported)
        result.skipped = True
        # Not worth a libcst parse, but a broken torch file is still worth a message; the C
        # parser tells in a fraction of the time (if picking the rules has not found it parses).
        broken = None if parsed else _python_syntax_error(source.text)
        if broken is not None:
            result.error, result.error_line = broken
    else:
        with _collected_at_the_end():
            _run_rules(result, selection, rules, has_suppressions)
    if key is not None:
        cache.store(key, _cache_payload(result))
    return result


@contextmanager
def _collected_at_the_end() -> Iterator[None]:
    """Python's cycle collector paused while one file is migrated, and run once at the end.

    libcst allocates millions of short-lived objects per file, and each burst of them started
    collections that walked the objects still alive, again and again (measured on 253 torch
    files: 6% of the run). With no collection during the file, everything it allocated is
    still in the youngest generation, so collecting that one frees the cycles it left."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)


def _cache_payload(result: FileResult) -> dict:
    """Everything a FileResult says besides its source, as JSON-ready values."""
    assert result.source is not None
    unchanged = result.new_text == result.source.text
    return {
        "new_text": None if unchanged else result.new_text,
        "applied": result.applied,
        "findings": [f.to_dict() for f in result.findings],
        "adjustments": [a.to_dict() for a in result.adjustments],
        "rewrite_regions": result.rewrite_regions,
        "unused_suppressions": [dataclasses.asdict(u) for u in result.unused_suppressions],
        "error": result.error,
        "error_line": result.error_line,
        "skipped": result.skipped,
    }


def _restore(result: FileResult, stored: dict) -> None:
    """The inverse of ``_cache_payload`` (a malformed entry raises: the caller treats it as a miss)."""
    result.error, result.error_line = stored["error"], stored["error_line"]
    result.skipped = stored["skipped"]
    if result.error is None and not result.skipped:
        result.new_text = (
            stored["new_text"] if stored["new_text"] is not None else result.source.text
        )
    result.applied = dict(stored["applied"])
    result.findings = [Finding(**f) for f in stored["findings"]]
    result.adjustments = [VerifyAdjustment(**a) for a in stored["adjustments"]]
    result.rewrite_regions = {
        code: [tuple(region) for region in regions]
        for code, regions in stored["rewrite_regions"].items()
    }
    result.unused_suppressions = [UnusedSuppression(**u) for u in stored["unused_suppressions"]]


def _run_rules(
    result: FileResult, selection: Selection, rules: list[type], has_suppressions: bool
) -> None:
    source, path = result.source, result.path
    try:
        module = cst.parse_module(source.text)
    except cst.ParserSyntaxError as exc:
        result.error, result.error_line = _syntax_error(source.text, exc)
        return
    except (RecursionError, MemoryError) as exc:
        result.error = f"cannot parse: {type(exc).__name__}"
        return
    details = PipelineDetails()
    try:
        new_text, applied, findings = run_pipeline(
            module, source.text, selection, str(path), details, rules, has_suppressions
        )
    except RuleFailure as exc:
        result.error, result.error_line = f"internal error in rule {exc.code}: {exc}", exc.line
        return
    if source.notebook is not None and new_text != source.text:
        try:
            source.notebook.render(new_text)  # every cell boundary and magic came back
        except SourceError as exc:
            result.error, result.error_line = str(exc), 0  # 0: the notebook as a whole
            return
    result.new_text = new_text
    result.applied = applied
    result.findings = findings
    result.rewrite_regions = details.rewrite_regions
    result.adjustments = details.adjustments
    if has_suppressions:
        result.unused_suppressions = unused_suppressions(
            source.text, details.used_suppressions, selection.active_codes(), codemods.all_codes()
        )


def rules_that_may_act(text: str, selection: Selection) -> list[type]:
    """The selected rules that may act on ``text``, in pipeline order; none means the file is
    not even parsed with libcst. Cheapest first: a torch word, each rule's trigger words, then
    what Python's own parser says the code mentions (``FileFacts``), once per file."""
    return _rules_that_may_act(text, selection)[0] if _passes_prefilter(text) else []


def _passes_prefilter(text: str) -> bool:
    return any(word in text for word in PREFILTER_WORDS)


def _rules_that_may_act(text: str, selection: Selection) -> tuple[list[type], bool]:
    """``rules_that_may_act`` for a text that passes the pre-filter, and whether Python's
    parser, run to pick them, read the text without error."""
    triggered = [rule for rule in selection.rules() if rule.is_triggered_by(text)]
    if not triggered:
        return [], False
    facts = FileFacts.of(text)
    if plain_libcst():  # no pre-filter: every triggered rule gets the file
        return triggered, facts.parsed
    return [rule for rule in triggered if rule.may_act(facts)], facts.parsed


def run_pipeline(
    module: cst.Module,
    original: str,
    selection: Selection,
    filename: str = "<string>",
    details: PipelineDetails | None = None,
    rules: Sequence[type] | None = None,
    has_suppressions: bool | None = None,
) -> tuple[str, dict[str, int], list[Finding]]:
    """``module``: ``original`` parsed. ``rules``: the selected rules that may act on ``original``
    (``rules_that_may_act``), and ``has_suppressions``: whether it has suppression comments;
    both computed here when not given."""
    if has_suppressions is None:
        has_suppressions = SUPPRESSION_PATTERN.search(original) is not None
    context = CodemodContext(filename=filename)
    context.scratch[DISABLED_FINDINGS_KEY] = selection.disabled_findings
    context.scratch[OPTIONS_KEY] = selection.rule_options()
    context.scratch[HAS_SUPPRESSIONS_KEY] = has_suppressions
    details = details if details is not None else PipelineDetails()
    findings: list[Finding] = []
    shared = shared_metadata(module, code=original)
    to_original = LineMap(original, original)  # the current tree's lines -> the user's lines
    edits = _Edits(filename)
    for rule in rules if rules is not None else rules_that_may_act(original, selection):
        rewrites_before = _rewrite_count(context)
        context.scratch[FINDINGS_KEY] = []
        context.scratch[ADJUSTMENTS_KEY] = []
        instance = rule(context)
        try:
            # One pass on the shared metadata; imports are fixed once, at the end.
            new_module = shared.transform(instance)
        except SkipFile:
            continue
        except Exception as exc:  # a bug in a rule must not cost the user the other files
            edits.blame_the_first_that_does_not_compile()  # its output may be the cause
            raise RuleFailure(rule.CODE, _describe(exc)) from exc
        finally:
            # A rule is done after its pass. What it kept (an index of the tree that refers
            # back to it, its bound methods) would hold the tree until the cycle collector
            # walks it (see SharedMetadata.release).
            vars(instance).clear()
        rule_findings = context.scratch[FINDINGS_KEY]
        used = context.scratch.pop(USED_SUPPRESSIONS_KEY, [])
        rule_adjustments = context.scratch.pop(ADJUSTMENTS_KEY, [])
        rewrote = _rewrite_count(context) != rewrites_before
        # Positions are in this rule's input; report them in the user's file.
        findings.extend(to_original.finding(f) for f in rule_findings)
        details.used_suppressions.update((to_original.line(ln), code) for ln, code in used)
        details.adjustments.extend(to_original.adjustment(a) for a in rule_adjustments)
        edited = bool(rule_findings) or rewrote
        new_code = None
        if edited:
            new_code = module_code(new_module, shared.statements)
            edits.append(rule.CODE, new_code)
            # One diff per edit, from the rule's input: the maps chain back to the user's file.
            step = LineMap(new_code, shared.code, then=to_original)
            if rewrote:
                details.rewrite_regions[rule.CODE] = _changed_regions(step, to_original)
            to_original = step
        shared.advance(new_module, edited, new_code)
        if context.scratch.get(OFF_XLA_KEY):
            break  # a rule found the file cannot run on XLA: the rest leave it alone
    try:
        module = _fix_imports(shared, context)
        new_text = (
            shared.code if module is shared.module else module_code(module, shared.statements)
        )
        if new_text != original:
            _check_compiles("imports", filename, new_text)
    except RuleFailure:
        edits.blame_the_first_that_does_not_compile()
        raise
    finally:
        shared.release()  # the run's trees and metadata go now, not at the next collection
    if new_text != original:
        new_text = _laid_out(original, new_text, filename)
    applied = dict(context.scratch.get(REWRITES_KEY, Counter()))
    findings.sort(key=lambda f: (f.line, f.column, f.code))
    applied = {code: n for code, n in applied.items() if n}
    return new_text, applied, findings


def _syntax_error(text: str, exc: cst.ParserSyntaxError) -> tuple[str, int]:
    """Python's own message and line when it agrees the file is broken (they read better)."""
    return _python_syntax_error(text) or (f"cannot parse with libcst: {exc.message}", exc.raw_line)


def _python_syntax_error(text: str) -> tuple[str, int] | None:
    try:
        compile(text, "<file>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return f"syntax error: {exc.msg}", exc.lineno or 1
    except (ValueError, RecursionError, MemoryError):
        pass
    return None


def _laid_out(original: str, new_text: str, filename: str) -> str:
    """``new_text``, which compiles, with its new long statements laid out; unchanged if layout
    fails (cosmetic)."""
    try:
        laid_out = wrap_long_new_lines(original, realign_continuation_lines(original, new_text))
        if laid_out != new_text:
            compile(laid_out, filename, "exec", dont_inherit=True)
    except Exception:  # never let layout cost the user a migration that compiles
        return new_text
    return laid_out


def _changed_regions(edit: LineMap, line_map: LineMap) -> list[tuple[int, int]]:
    """The (first, last) lines, in the user's file (``line_map`` maps there), of each block of
    a rule's input that its output (``edit`` maps that to the input) replaces or deletes; an
    insertion is placed on the line it follows. Inserted TODO markers are the rule's
    findings, not rewrites."""
    regions = set()
    for tag, old_start, old_end, new_start, new_end in edit.opcodes:
        inserted = edit.new_lines[new_start:new_end]
        if tag == "insert" and all(line.lstrip().startswith(MARKER_PREFIX) for line in inserted):
            continue
        if tag == "insert":
            line = line_map.line(max(1, old_start))
            regions.add((line, line))
        elif tag != "equal":
            regions.add((line_map.line(old_start + 1), line_map.line(old_end)))
    return sorted(regions)


def _rewrite_count(context: CodemodContext) -> int:
    return sum(context.scratch.get(REWRITES_KEY, Counter()).values())


def _fix_imports(shared: SharedMetadata | StockMetadata, context: CodemodContext) -> cst.Module:
    """The rules' import additions and removals, once, on the pipeline's last tree."""
    try:
        with visitors_set_up_faster():
            if context.scratch.get(AddImportsVisitor.CONTEXT_KEY):
                shared.advance(with_imports_added(shared.module, context), edited=True)
            if context.scratch.get(RemoveImportsVisitor.CONTEXT_KEY):
                removed = with_imports_removed(shared.module, context, shared.code)
                if removed is None:
                    removed = shared.transform(RemoveImportsVisitor(context), on_demand=False)
                shared.advance(removed, edited=True)
    except Exception as exc:
        raise RuleFailure("imports", _describe(exc)) from exc
    return tidy_torch_xla_imports(shared.module)


def _check_compiles(code: str, filename: str, text: str) -> None:
    try:
        compile(text, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise RuleFailure(code, f"output would not compile: {exc.msg}", exc.lineno or 1) from exc


class _Edits:
    """Each rule's output that changed the code, kept to name the rule that broke it.

    Only the pipeline's final code is compiled: compiling every rule's output cost a compile
    per edit (198 on a quarter of the torch sources, 1.5 s). When the final code does not
    compile, or a later step fails, the outputs are compiled in order, and the first that does
    not compile is the one reported."""

    def __init__(self, filename: str) -> None:
        self._filename = filename
        self._outputs: list[tuple[str, str]] = []  # (rule code, its output)

    def append(self, code: str, text: str) -> None:
        self._outputs.append((code, text))

    def blame_the_first_that_does_not_compile(self) -> None:
        for code, text in self._outputs:
            _check_compiles(code, self._filename, text)


def _describe(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" ({Path(frame.filename).name}:{frame.lineno})" if frame else ""
    return f"{type(exc).__name__}: {exc}{where}"


# A run whose files hold fewer bytes than this stays in this process, whatever ``jobs`` says.
# Each worker process costs its start and its first file (the tables the fast layer works out
# on first use, libcst's own set-up, black's import when it lays out a line): 0.15 to 0.3 s of
# CPU for two workers, measured against one process on 6 to 40 KB of the fixtures' training
# scripts, which cost 25 to 50 ms of CPU per KB. Below 32 KB the half of the work a second core
# could take over is not much more than that; and on a 2-core machine busy with other work
# (load 10) the pool was slower at every size measured, up to 90 KB, by 8 to 24%. A pre-commit
# hook's few files, or a project the size of the demo (10 KB), are migrated in one process.
IN_PROCESS_BELOW_BYTES = 32 * 1024


def migrate_files(
    paths: Sequence[Path],
    selection: Selection,
    jobs: int = 1,
    cache: ResultCache | None = None,
) -> Iterator[FileResult]:
    """Yield one FileResult per path, as files are done, processing in ``jobs`` processes (or
    in this one when the files are too small to pay for more: ``IN_PROCESS_BELOW_BYTES``).

    In this process the results come in the given order. With more, the largest files are
    started first: a large file started last kept one process busy long after the others ran
    out of work (on half of torch's tree its largest file alone took the last 95 s). Callers
    that report in path order sort the results.
    """
    in_process = jobs <= 1 or len(paths) < 2
    sizes = {} if in_process else {path: _size(path) for path in paths}
    if in_process or sum(sizes.values()) < IN_PROCESS_BELOW_BYTES:
        for path in paths:
            yield migrate_file(path, selection, cache)
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed  # (only a pool needs them)

    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_set_up_worker)
    finished = False
    try:
        batches = [
            pool.submit(_migrate_batch, batch, selection, cache)
            for batch in _largest_first_batches(sizes, jobs)
        ]
        for done in as_completed(batches):
            yield from done.result()
        finished = True
    finally:
        if not finished:
            # Ctrl-C, or a consumer that stopped early: the workers are stopped, not waited for
            # (the largest file, started first, can take minutes). They only compute; every
            # write happens in this process.
            _stop_workers(pool)
        pool.shutdown(wait=True, cancel_futures=True)  # queued files are dropped


def _migrate_batch(
    paths: Sequence[Path], selection: Selection, cache: ResultCache | None
) -> list[FileResult]:
    return [migrate_file(path, selection, cache) for path in paths]


def _largest_first_batches(sizes: Mapping[Path, int], jobs: int) -> list[list[Path]]:
    """The paths (``sizes``: path -> bytes) from the largest file to the smallest, in batches of
    up to 16 files and about 1/64 of each process's share of the bytes: few round trips to the
    workers for many small files, and small batches at the end, where the processes should
    finish together."""
    budget = max(1, sum(sizes.values()) // (jobs * 64))
    batches: list[list[Path]] = []
    batch: list[Path] = []
    batch_bytes = 0
    for path in sorted(sizes, key=lambda p: sizes[p], reverse=True):
        batch.append(path)
        batch_bytes += sizes[path]
        if batch_bytes >= budget or len(batch) == 16:
            batches.append(batch)
            batch, batch_bytes = [], 0
    if batch:
        batches.append(batch)
    return batches


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # gone or unreadable: migrate_file reports it
        return 0


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    stop = getattr(pool, "terminate_workers", None)  # public from Python 3.14
    if stop is not None:
        stop()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def _set_up_worker() -> None:
    """Workers leave Ctrl-C to the main process, which stops the run and reports it once.

    What a worker holds when it starts (the modules it imported, about 190,000 objects) stays
    to the end: frozen, the cycle collector's full collections no longer walk it. Over a
    quarter of the changed torch files (83), full collections took 1.0 s; 0.2 s with this and
    the trees freed as soon as they are done with (``SharedMetadata.release``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()


def default_jobs() -> int:
    return (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    )
