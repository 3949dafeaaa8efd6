"""`diff`, `apply` and `check`: the commands that run the rules on files.

Imported by the CLI when one of them runs (``migrate/cli.py`` builds the parser and lists the
rules without the engine); the SARIF and Markdown writers and `apply --branch` when asked for.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Iterator, Sequence

from .cache import ResultCache, default_location
from .cli import EXIT_CHANGES, EXIT_FAILED, EXIT_OK, UsageError
from .config import Config, ConfigError, find_pyproject, load_config
from .diff import result_diff
from .discover import discover, display_path
from .engine import FileResult, Selection, default_jobs, migrate_files
from .pr import options as pr_options
from .report import RunSummary, applied_text, check_json, check_text, error_line, finding_lines
from .source import write_atomically
from .terminal import Terminal


def _load_config(args) -> Config:
    """The project's ``[tool.tpu-migrate]``, from ``--config`` or the nearest pyproject.toml."""
    if args.no_config:
        return Config()
    try:
        if args.config:
            return load_config(Path(args.config))
        pyproject = find_pyproject(args.paths)
        return load_config(pyproject) if pyproject else Config()
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def _apply_config(args) -> Config:
    """Fill in what the command line left unset from the configuration: a flag given on the
    command line replaces the configured value."""
    config = _load_config(args)
    if args.select is None:
        args.select = list(config.select or ())
    if args.extend_select and args.select:  # an empty selection already has every rule
        args.select = [*args.select, *args.extend_select]
    if args.ignore is None:
        args.ignore = list(config.ignore)
    if args.exclude is None:
        args.exclude = list(config.exclude)
    if args.jobs is None:
        args.jobs = config.jobs or default_jobs()
    args.rule_options = config.options
    return config


def _run(args) -> tuple[list[FileResult], list[str]]:
    """Discover and migrate; returns results in path order and discovery problems as lines."""
    _apply_config(args)
    try:
        selection = Selection.from_options(args.select, args.ignore, args.rule_options)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    found = discover(args.paths, args.exclude)
    problems = [f"{display_path(path)}:1: {message}" for path, message in found.problems]
    terminal = Terminal()
    results = []
    cache = None if args.no_cache else ResultCache(default_location(), selection)
    with terminal.progress(len(found.files)) as advance:
        for result in migrate_files(found.files, selection, args.jobs, cache):
            results.append(result)
            advance()
    position = {path: index for index, path in enumerate(found.files)}
    results.sort(key=lambda result: position[result.path])
    if cache is not None:
        cache.prune()
    return results, problems


def diff_command(args) -> int:
    results, problems = _run(args)
    terminal = Terminal()
    for result in results:
        if result.error:
            terminal.error(error_line(result))
        elif result.changed:
            terminal.diff(result_diff(result, display_path(result.path)))
    for line in problems:
        terminal.error(line)
    summary = RunSummary.of(results, len(problems))
    terminal.note(summary.sentence("would change"))
    if summary.failed:
        return EXIT_FAILED
    return EXIT_CHANGES if summary.changed else EXIT_OK


def check_command(args) -> int:
    results, problems = _run(args)
    summary = RunSummary.of(results, len(problems))
    if args.format == "json":
        sys.stdout.write(check_json(results, summary))
    elif args.format == "sarif":
        from .sarif import check_sarif

        sys.stdout.write(check_sarif(results, summary, problems, _scanned_root(args.paths)))
    elif args.format == "markdown":
        from .markdown_report import check_markdown

        sys.stdout.write(check_markdown(results, summary, problems))
    else:
        sys.stdout.write(check_text(results, summary))
    for line in problems:
        print(line, file=sys.stderr)
    if summary.failed:
        return EXIT_FAILED
    left = summary.changed or summary.findings or summary.unused_suppressions
    return EXIT_CHANGES if left else EXIT_OK


def _scanned_root(paths: Sequence[str]) -> Path:
    """What SARIF locations are relative to: the current directory when every path is in it
    (run from the repository root, as code scanning expects), else the paths' common directory."""
    cwd = Path.cwd().absolute()
    given = [Path(p).absolute() for p in paths or ["."]]
    if all(path == cwd or cwd in path.parents for path in given):
        return cwd
    directories = [path if path.is_dir() else path.parent for path in given]
    return Path(os.path.commonpath(directories))


def apply_command(args) -> int:
    if pr_options.wanted(args):
        from .pr import command as pr_command

        _apply_config(args)
        return pr_command.apply_on_branch(args)
    terminal = Terminal()
    written: list[str] = []
    failures = 0
    results: list[FileResult] = []
    try:
        found_results, problems = _run(args)
        for result in found_results:
            results.append(result)
            path = display_path(result.path)
            if result.error:
                terminal.error(error_line(result))
                continue
            if result.changed:
                with _interrupts_deferred():  # a file written is a file reported as written
                    problem = _write(result)
                    if not problem:
                        written.append(path)
                if problem:
                    failures += 1
                    terminal.error(f"{path}:1: not written: {problem}")
                    continue
                terminal.out(f"{path}: {applied_text(result.applied)}")
            for line in finding_lines(result):
                terminal.out(line)
    except KeyboardInterrupt:
        terminal.error(
            f"interrupted: {len(written)} file(s) were written completely"
            + (f" ({', '.join(written)})" if written else "")
            + "; every other file is unchanged (none was left half-written)."
        )
        return 130
    for line in problems:
        terminal.error(line)
    summary = RunSummary.of(results, len(problems) + failures)
    summary.changed = len(written)
    terminal.note(summary.sentence("rewritten"))
    return EXIT_FAILED if summary.failed else EXIT_OK


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Ctrl-C waits until the block is done: it arrived between a file's rename and its record
    in ``written`` once, and the interrupt report undercounted the files written."""
    if not hasattr(signal, "pthread_sigmask"):  # (not on Windows)
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _write(result: FileResult) -> str | None:
    """Write one result atomically, unless the file changed on disk since it was read."""
    try:
        if result.path.read_bytes() != result.source.raw:
            return "the file changed on disk during the run"
        write_atomically(result.path, result.new_bytes())
    except (OSError, UnicodeEncodeError) as exc:
        return getattr(exc, "strerror", None) or str(exc)
    return None
