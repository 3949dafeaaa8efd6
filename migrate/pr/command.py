"""`tpu-migrate apply PATH --branch NAME`: the migration as a branch with one commit per rule.

Nothing is written before every check passed (git work tree, branch name free, identity known,
clean work tree, template and --verify readable). Exit codes follow the CLI: 0 done, 1 the
verification found a difference, 2 a file could not be processed or git / gh failed, 3 usage.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from ..discover import discover, display_path
from ..engine import FileResult, Selection, migrate_files
from ..report import RunSummary, applied_text, error_line, finding_lines
from ..source import write_atomically
from ..terminal import Terminal
from ..verify import command as verify_command
from ..verify import render as verify_render
from ..verify.compare import DIFFERENT, EQUIVALENT
from ..verify.session import Options as VerifyOptions
from ..verify.session import UsageError as VerifyUsageError
from ..verify.session import verify
from .body import RunCommand, TemplateError, build_context, load_template, render
from .commits import RuleCommit, file_states, plan_commits
from .gh import PullRequest, gh_problem, open_pull_request
from .git import GitError, Repo
from .options import PR_ONLY_OPTIONS

EXIT_OK, EXIT_DIFFERENT, EXIT_FAILED, EXIT_USAGE = 0, 1, 2, 3
MAX_LISTED = 20  # dirty files named in the refusal


class UsageError(Exception):
    pass


def apply_on_branch(args: argparse.Namespace) -> int:
    terminal = Terminal()
    try:
        return _apply_on_branch(args, terminal)
    except UsageError as exc:
        terminal.error(f"tpu-migrate: error: {exc}")
        return EXIT_USAGE
    except GitError as exc:  # before the branch exists: nothing was changed
        terminal.error(f"tpu-migrate: error: {exc}")
        return EXIT_FAILED


def _apply_on_branch(args: argparse.Namespace, terminal: Terminal) -> int:
    if not args.branch:
        used = [f"--{name.replace('_', '-')}" for name in PR_ONLY_OPTIONS if getattr(args, name)]
        raise UsageError(f"{', '.join(used)} only work together with --branch NAME")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    try:
        template = load_template(args.pr_template)
        selection = Selection.from_options(args.select, args.ignore, args.rule_options)
    except (TemplateError, KeyError) as exc:
        raise UsageError(exc.args[0]) from None
    paths = [Path(p) for p in args.paths or ["."]]
    repo = _repository(paths)
    base = _check_repository(repo, args.branch)
    verify_options = _verify_options(args.verify, repo) if args.verify else None

    dirty = repo.status()
    if dirty and not args.allow_dirty:
        raise UsageError(_dirty_message(dirty))
    files, left_out, problems = _selected_files(repo, paths, args.exclude, {e.path for e in dirty})
    results = _migrate(files, selection, args.jobs, terminal)
    summary = RunSummary.of([result for _, result in results], len(problems))
    for line in problems:
        terminal.error(line)
    for path in left_out:
        terminal.note(f"{path}: left out (uncommitted changes or not tracked by git)")
    changed = [(path, result) for path, result in results if result.changed]
    commits = plan_commits(file_states(changed, selection, args.jobs), selection)
    if not commits:
        terminal.note(summary.sentence("rewritten") + " Nothing to commit: no branch created.")
        return EXIT_FAILED if summary.failed else EXIT_OK

    snapshot = _snapshot(repo) if verify_options else None
    try:
        repo.create_branch(args.branch)
        if not _commit_all(repo, args.branch, commits, changed, terminal):
            terminal.error(_recovery(args.branch, base, failed=True))
            return EXIT_FAILED
        _check_reverts(repo, commits)
        report = _verify(verify_options, repo, snapshot, terminal) if verify_options else None
    except KeyboardInterrupt:
        terminal.error("interrupted; the work tree matches the last commit made.")
        terminal.error(_recovery(args.branch, base, failed=True))
        return 130
    finally:
        if snapshot is not None:
            shutil.rmtree(snapshot, ignore_errors=True)

    context = build_context(
        branch=args.branch,
        base=base.name,
        commits=commits,
        results=results,
        failed=[error_line(result) for _, result in results if result.error] + problems,
        left_out=left_out,
        verify=report,
        run=_run_command(verify_options, repo),
        verify_command=f"tpu-migrate verify {args.verify}" if args.verify else None,
    )
    try:
        body = render(template, context)
    except TemplateError as exc:
        terminal.error(f"tpu-migrate: error: {exc} (the branch is made; fix the template)")
        terminal.error(_recovery(args.branch, base))
        return EXIT_FAILED
    body_path = _write_body(body, args.pr_body, repo, args.branch, terminal)
    sys.stdout.write(body)
    sys.stdout.flush()
    summary.changed = len(changed)
    terminal.note(summary.sentence("rewritten"))
    terminal.note(_recovery(args.branch, base, commits=len(commits)))
    if body_path is None:
        return EXIT_FAILED
    code = _exit_code(summary, verify_options, report)
    if args.open_pr:
        title = _title(commits, changed)
        request = PullRequest(
            title, body_path, args.branch, base.branch, repo.remote_for(base.branch)
        )
        if not _open_pr(request, repo, terminal):
            return EXIT_FAILED
    return code


# --- checks before anything is written ----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Base:
    """Where the branch starts: the checked-out branch, or the commit of a detached HEAD."""

    branch: str | None
    commit: str

    @property
    def name(self) -> str:
        return self.branch or self.commit[:12]


def _repository(paths: list[Path]) -> Repo:
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or directory")
    try:
        repo = Repo.containing(paths[0])
        for path in paths[1:]:
            if Repo.containing(path).top != repo.top:
                raise UsageError(f"{path} is in another git work tree than {paths[0]}")
    except GitError as exc:
        raise UsageError(str(exc)) from None
    return repo


def _check_repository(repo: Repo, branch: str) -> Base:
    if not repo.valid_branch_name(branch):
        raise UsageError(f"{branch!r} is not a valid branch name")
    if repo.branch_exists(branch):
        raise UsageError(
            f"branch {branch!r} already exists; pick another name "
            f"(or delete it: git branch -D {shlex.quote(branch)})"
        )
    head = repo.head_commit()
    if head is None:
        raise UsageError("the repository has no commit yet: commit your code first")
    problem = repo.identity_problem()
    if problem:
        raise UsageError(problem)
    return Base(repo.current_branch(), head)


def _dirty_message(dirty) -> str:
    listed = [entry.describe() for entry in dirty[:MAX_LISTED]]
    more = f" and {len(dirty) - MAX_LISTED} more" if len(dirty) > MAX_LISTED else ""
    return (
        "the work tree has uncommitted changes: "
        + ", ".join(listed)
        + more
        + ". Commit or stash them first, or pass --allow-dirty (files with uncommitted changes "
        "are then left out of the migration)"
    )


def _selected_files(
    repo: Repo, paths: list[Path], exclude: list[str], dirty: set[str]
) -> tuple[list[tuple[str, Path]], list[str], list[str]]:
    """(relative path, path) of the files to migrate; files left out; discovery problems."""
    found = discover(paths, exclude)
    problems = [f"{display_path(path)}:1: {message}" for path, message in found.problems]
    inside = []
    for path in found.files:
        relative = repo.relative(path)
        if relative is None:
            problems.append(f"{display_path(path)}:1: outside the git work tree {repo.top}")
        else:
            inside.append((relative, path))
    tracked = repo.tracked([relative for relative, _ in inside])
    files = [(rel, path) for rel, path in inside if rel in tracked and rel not in dirty]
    left_out = [rel for rel, _ in inside if rel not in tracked or rel in dirty]
    return files, left_out, problems


def _verify_options(spec: str, repo: Repo) -> VerifyOptions:
    """The verify options from ``--verify "SCRIPT [options] [-- ARGS]"``."""
    parser = argparse.ArgumentParser(prog="tpu-migrate apply --verify")
    commands = parser.add_subparsers(parser_class=_RaisingParser)
    verify_command.add_parser(commands)
    try:
        options = verify_command.parse(parser.parse_args(["verify", *shlex.split(spec)]))
    except (VerifyUsageError, ValueError) as exc:
        raise UsageError(f"--verify {spec!r}: {exc}") from None
    for name in ("migrated", "root", "json_out"):
        if getattr(options, name) is not None:
            flag = "--json" if name == "json_out" else f"--{name}"
            raise UsageError(f"--verify: {flag} is chosen by apply --branch (the branch's files)")
    if not options.script.is_file():
        raise UsageError(f"--verify: {options.script}: no such file")
    if repo.relative(options.script) is None:
        raise UsageError(f"--verify: {options.script} is not inside the git work tree {repo.top}")
    return options


class _RaisingParser(argparse.ArgumentParser):
    def error(self, message):
        raise VerifyUsageError(message)


# --- doing it ---------------------------------------------------------------------------------


def _migrate(
    files: list[tuple[str, Path]], selection: Selection, jobs: int, terminal: Terminal
) -> list[tuple[str, FileResult]]:
    migrated = {}
    with terminal.progress(len(files)) as advance:
        for result in migrate_files([path for _, path in files], selection, jobs):
            migrated[result.path] = result
            advance()
    results = [(relative, migrated[path]) for relative, path in files]
    for _, result in results:
        if result.error:
            terminal.error(error_line(result))
        elif result.changed:
            terminal.out(f"{display_path(result.path)}: {applied_text(result.applied)}")
        for line in finding_lines(result):
            terminal.out(line)
    return results


def _snapshot(repo: Repo) -> Path:
    """A copy of the files git knows, as they are now: the original side of --verify."""
    root = Path(tempfile.mkdtemp(prefix="tpu-migrate-original-"))
    for relative in repo.known_files():
        source, target = repo.top / relative, root / relative
        if not source.exists() and not source.is_symlink():
            continue  # deleted but still tracked
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(source.readlink())
        elif source.is_file():
            shutil.copy2(source, target)
    return root


def _commit_all(
    repo: Repo,
    branch: str,
    commits: list[RuleCommit],
    changed: list[tuple[str, FileResult]],
    terminal: Terminal,
) -> bool:
    """Write and commit each rule's files; False (after saying why) when something failed."""
    committed = {path: result.source.raw for path, result in changed}
    for commit in commits:
        try:
            _write_commit_files(repo, commit, committed)
            commit.sha = repo.commit_paths(commit.message(), commit.paths)
        except (GitError, _StaleFile, OSError) as exc:
            terminal.error(f"tpu-migrate: error: {exc}")
            _restore(repo, commit, committed)  # the work tree matches the last commit again
            return False
        except KeyboardInterrupt:
            if commit.sha is None:
                _restore(repo, commit, committed)
            raise
        committed.update(commit.contents)
        terminal.out(f"[{branch} {commit.sha[:10]}] {commit.subject()}")
    return True


def _check_reverts(repo: Repo, commits: list[RuleCommit]) -> None:
    """Which commits `git revert` can take out alone at the tip (reported in the description)."""
    for commit in commits:
        try:
            commit.revert_conflicts = repo.revert_conflicts(commit.sha)
        except GitError:
            commit.revert_conflicts = None  # unknown: the description does not promise either way


class _StaleFile(Exception):
    pass


def _write_commit_files(repo: Repo, commit: RuleCommit, committed: dict[str, bytes]) -> None:
    for path, data in commit.contents.items():
        target = repo.top / path
        if target.read_bytes() != committed[path]:
            raise _StaleFile(f"{path}: the file changed on disk during the run; stopped")
        write_atomically(target, data)


def _restore(repo: Repo, commit: RuleCommit, committed: dict[str, bytes]) -> None:
    for path, data in commit.contents.items():
        target = repo.top / path
        try:
            if target.read_bytes() == data:
                write_atomically(target, committed[path])
        except OSError:
            pass


def _verify(options: VerifyOptions, repo: Repo, snapshot: Path, terminal: Terminal) -> dict | None:
    """The verify JSON of the original (the snapshot) against the branch; None if it could not run."""
    relative = repo.relative(options.script)
    options = dataclasses.replace(
        options,
        script=snapshot / relative,
        migrated=repo.top / relative,
        root=snapshot,
        cwd=options.cwd or Path.cwd(),
    )
    terminal.note(f"verifying {relative} on the CPU: the original against the branch's version...")
    try:
        report = verify(options)
    except VerifyUsageError as exc:
        terminal.error(f"tpu-migrate verify: error: {exc}")
        return None
    sys.stdout.write(verify_render.text(report))
    result = verify_render.to_json(report)
    # apply chose the migrated script itself: its local path means nothing to a reviewer.
    result["notes"] = [n for n in result["notes"] if not n.startswith("migrated script given:")]
    return result


def _run_command(options: VerifyOptions | None, repo: Repo) -> RunCommand | None:
    if options is None:
        return None
    return RunCommand(repo.relative(options.script), list(options.script_args))


def _write_body(
    body: str, requested: Path | None, repo: Repo, branch: str, terminal: Terminal
) -> Path | None:
    path = requested or repo.git_dir() / "tpu-migrate" / f"{branch.replace('/', '-')}.md"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    except OSError as exc:
        terminal.error(f"{path}: cannot write the PR description: {exc.strerror or exc}")
        return None
    terminal.note(f"PR description written to {display_path(path)}")
    return path


def _exit_code(summary: RunSummary, verify_options, report: dict | None) -> int:
    if summary.failed or (verify_options is not None and report is None):
        return EXIT_FAILED
    if report is None or report["verdict"] == EQUIVALENT:
        return EXIT_OK
    return EXIT_DIFFERENT if report["verdict"] == DIFFERENT else EXIT_FAILED


def _title(commits: list[RuleCommit], changed: list) -> str:
    rules, files = len(commits), len(changed)
    return (
        f"Migrate to torch_xla (TPU): {rules} rule{'s' if rules != 1 else ''}, "
        f"{files} file{'s' if files != 1 else ''}"
    )


def _open_pr(request: PullRequest, repo: Repo, terminal: Terminal) -> bool:
    problem = gh_problem(repo.top)
    if problem is None and request.remote is None:
        problem = "the repository has no remote to push the branch to (git remote add origin URL)"
    if problem:
        terminal.error(f"tpu-migrate: cannot open the pull request: {problem}.")
        terminal.error("The branch and description are ready; to open it yourself, run:")
        terminal.error(f"  {request.shell_commands()}")
        return False
    ok, output = open_pull_request(request, repo.top)
    if output:
        (terminal.out if ok else terminal.error)(output)
    if not ok:
        terminal.error(f"To retry: {request.shell_commands()}")
    return ok


def _recovery(branch: str, base: Base, commits: int = 0, failed: bool = False) -> str:
    back = shlex.join(["git", "checkout", base.branch or base.commit])
    drop = shlex.join(["git", "branch", "-D", branch])
    if failed:
        first = f"branch {branch} is checked out with the commits made so far; {base.name} is unchanged."
    else:
        first = (
            f"Branch {branch} created from {base.name} with {commits} commit"
            f"{'s' if commits != 1 else ''} (one per rule) and checked out; {base.name} is unchanged."
        )
    return "\n".join(
        [
            first,
            f"  review it:         git log --reverse --stat {base.name}..{shlex.quote(branch)}",
            f"  go back:           {back}",
            f"  drop the branch:   {back} && {drop}",
        ]
    )
