"""Command line: diff, apply, check, rules, explain, verify.

Exit codes: 0 nothing to do / all went well, 1 changes (diff, check), findings or unused
suppressions (check) were found,
2 some file could not be processed (the others still were), 3 usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Iterator, Sequence

import codemods

from . import __version__
from .cache import ResultCache, default_location
from .config import Config, ConfigError, find_pyproject, load_config
from .diff import result_diff
from .discover import discover, display_path
from .engine import FileResult, Selection, default_jobs, migrate_files
from .pr import command as pr_command
from .markdown_report import check_markdown
from .report import RunSummary, applied_text, check_json, check_text, error_line, finding_lines
from .sarif import check_sarif
from .source import write_atomically
from .terminal import Terminal
from .verify import command as verify_command

EXIT_OK, EXIT_CHANGES, EXIT_FAILED, EXIT_USAGE = 0, 1, 2, 3


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return args.handler(args)
    except _UsageError as exc:
        print(f"tpu-migrate: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def exit(self, status: int = 0, message: str | None = None):  # usage errors exit 3, not 2
        if message:
            sys.stderr.write(message)
        sys.exit(EXIT_USAGE if status else status)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tpu-migrate", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"tpu-migrate {__version__}")
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)

    def files_command(name: str, help_text: str, handler) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument(
            "paths", nargs="*", metavar="PATH", help="files or directories (default: .)"
        )
        sub.add_argument(
            "--select",
            type=_codes,
            default=None,
            metavar="CODE[,CODE]",
            help="only these rules (prefixes such as TPU1 allowed); replaces the config's select",
        )
        sub.add_argument(
            "--extend-select",
            type=_codes,
            default=[],
            metavar="CODE[,CODE]",
            help="add these rules to the selection (from the config or --select)",
        )
        sub.add_argument(
            "--ignore",
            type=_codes,
            default=None,
            metavar="CODE[,CODE]",
            help="skip these rules or findings (prefixes allowed); replaces the config's ignore",
        )
        sub.add_argument(
            "--exclude",
            action="append",
            default=None,
            metavar="GLOB",
            help="skip paths matching GLOB (repeatable); replaces the config's exclude",
        )
        sub.add_argument(
            "--jobs",
            "-j",
            type=int,
            default=None,
            metavar="N",
            help="worker processes (default: the config's jobs, else all cores)",
        )
        config = sub.add_mutually_exclusive_group()
        config.add_argument(
            "--config",
            metavar="FILE",
            help="read [tool.tpu-migrate] from FILE instead of the nearest pyproject.toml",
        )
        config.add_argument("--no-config", action="store_true", help="ignore every pyproject.toml")
        sub.add_argument(
            "--no-cache",
            action="store_true",
            help="neither read nor write the result cache (.tpu-migrate-cache/)",
        )
        sub.set_defaults(handler=handler)
        return sub

    files_command(
        "diff", "Show what `apply` would change, as a unified diff; change nothing.", _cmd_diff
    )
    apply = files_command("apply", "Rewrite the files in place.", _cmd_apply)
    pr_command.add_arguments(apply)
    check = files_command(
        "check", "List the rewrites that apply and the findings that need a human.", _cmd_check
    )
    check.add_argument("--format", choices=("text", "json", "sarif", "markdown"), default="text")

    rules = commands.add_parser("rules", help="List every rule.", description="List every rule.")
    rules.set_defaults(handler=_cmd_rules)
    explain = commands.add_parser("explain", help="Show a rule's documentation.")
    explain.add_argument("code", metavar="CODE")
    explain.set_defaults(handler=_cmd_explain)
    verify_command.add_parser(commands)
    return parser


def _codes(text: str) -> list[str]:
    return [code.strip().upper() for code in text.split(",") if code.strip()]


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
        raise _UsageError(str(exc)) from None


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
        raise _UsageError(exc.args[0]) from None
    if args.jobs < 1:
        raise _UsageError("--jobs must be at least 1")
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


def _cmd_diff(args) -> int:
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


def _cmd_check(args) -> int:
    results, problems = _run(args)
    summary = RunSummary.of(results, len(problems))
    if args.format == "json":
        sys.stdout.write(check_json(results, summary))
    elif args.format == "sarif":
        sys.stdout.write(check_sarif(results, summary, problems, _scanned_root(args.paths)))
    elif args.format == "markdown":
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


def _cmd_apply(args) -> int:
    if pr_command.wanted(args):
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


def _cmd_rules(args) -> int:
    rows = []
    for rule in sorted(codemods.PIPELINE, key=lambda r: r.CODE):
        rows.append((rule.CODE, rule.NAME, rule.SAFETY.value, rule.SUMMARY))
        for code, summary in rule.FINDINGS.items():
            rows.append((code, f"(finding of {rule.CODE})", "manual", summary))
    rows.sort(key=lambda row: row[0])
    width = max(len(row[1]) for row in rows)
    for code, name, safety, summary in rows:
        print(f"{code}  {name:<{width}}  {safety:<8}  {summary}")
    return EXIT_OK


def _cmd_explain(args) -> int:
    try:
        rule = codemods.rule_by_code(args.code)
    except KeyError as exc:
        raise _UsageError(exc.args[0]) from None
    code = args.code.upper()
    if code in rule.FINDINGS:
        print(f"{code} (a finding of {rule.CODE} {rule.NAME}; needs a human)")
        print(rule.finding_doc(code).full_text())
        print()
        print(f"The rule that reports it, {rule.CODE}:")
        print()
    print(f"{rule.CODE} {rule.NAME} ({rule.SAFETY.value})")
    print(rule.SUMMARY)
    if rule.FINDINGS:
        print()
        for code, summary in rule.FINDINGS.items():
            print(f"{code}: {summary}")
    print()
    print(rule.documentation())
    if rule.OPTIONS:
        print()
        print(f"Options ([tool.tpu-migrate.options.{rule.CODE}] in pyproject.toml, defaults):")
        for name, default in rule.OPTIONS.items():
            print(f"    {name} = {json.dumps(default)}")
    return EXIT_OK
