"""Split a migration into one commit per rule.

Rules interact (later rules see earlier rules' output; imports are fixed once at the end), so a
rule's commit is not "its edits" in isolation. It is the honest difference of two pipeline runs on
the original text: state_k runs the first k selected rules, and commit k = state_k - state_(k-1).
The last state is exactly what plain ``apply`` writes, so the series ends on the same tree.
"""

from __future__ import annotations

import textwrap
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Sequence

import libcst as cst

import codemods

from .. import __version__
from ..engine import FileResult, RuleFailure, Selection, run_pipeline


@dataclass
class FileStates:
    """One file's text after each prefix of the selected rules (index 0: the original)."""

    path: str  # relative to the top of the work tree
    result: FileResult  # the full run (what plain apply writes)
    states: list[str | None]  # None: that prefix failed, its changes go with the next rule's
    active: frozenset[str] = frozenset()  # rules that rewrote or flagged something here


@dataclass
class RuleCommit:
    rule: type
    contents: dict[str, bytes] = field(default_factory=dict)  # path -> bytes after this commit
    edits: dict[str, int] = field(default_factory=dict)  # path -> rewrites this rule made there
    findings: dict[str, int] = field(default_factory=dict)  # path -> findings it left there
    folded: dict[str, list[str]] = field(default_factory=dict)  # path -> earlier codes included
    sha: str | None = None
    revert_conflicts: list[str] | None = None  # files where reverting it alone conflicts at the tip

    @property
    def paths(self) -> list[str]:
        return sorted(self.contents)

    def subject(self) -> str:
        count = len(self.contents)
        return f"{self.rule.CODE} {self.rule.NAME}: {count} file{'s' if count != 1 else ''}"

    def message(self) -> str:
        width = max(len(path) for path in self.paths)
        lines = [f"  {path:<{width}}  {self._file_note(path)}".rstrip() for path in self.paths]
        parts = [
            self.subject(),
            textwrap.fill(self.rule.SUMMARY, 72),
            "\n".join(lines),
        ]
        if self.rule.NUMERICS:
            parts.append(textwrap.fill(f"Numerics: {self.rule.NUMERICS}", 72))
        parts.append(f"Migrated-by: tpu-migrate {__version__}")
        return "\n\n".join(parts) + "\n"

    def _file_note(self, path: str) -> str:
        notes = []
        edits, findings = self.edits.get(path, 0), self.findings.get(path, 0)
        if edits:
            notes.append(f"{edits} rewrite{'s' if edits != 1 else ''}")
        if findings:
            notes.append(f"{findings} finding{'s' if findings != 1 else ''} (TODO marker)")
        if path in self.folded:
            notes.append(
                f"with the changes of {', '.join(self.folded[path])} "
                "(they do not compile without this rule)"
            )
        return ", ".join(notes)


def rule_states(
    text: str, filename: str, selection: Selection, final_text: str, active: frozenset[str]
) -> list[str | None]:
    """state_0 .. state_n of one file; state_n is ``final_text`` (the full run, already made).

    ``active`` are the rules that rewrote or flagged something in the full run. Every other rule
    leaves its input as it is (a rule records each edit: the engine relies on that too), so the
    state after it is the state before it and costs no pipeline run.
    """
    module = cst.parse_module(text)
    states: list[str | None] = [text]
    codes = selection.rule_codes
    for k, code in enumerate(codes[:-1], start=1):
        if code not in active:
            states.append(states[-1])
            continue
        prefix = Selection(codes[:k], selection.disabled_findings, selection.options)
        try:
            new_text, _, _ = run_pipeline(module, text, prefix, filename)
        except RuleFailure:  # e.g. imports of a half-done migration: fold into the next rule
            new_text = None
        states.append(new_text)
    states.append(final_text)
    return states


def _states_job(job: tuple[str, str, Selection, str, frozenset[str]]) -> list[str | None]:
    return rule_states(*job)


def active_rules(result: FileResult) -> frozenset[str]:
    """Rules that rewrote or flagged something in ``result`` (the full run)."""
    owners = codemods.all_codes()
    return frozenset(result.applied) | {owners[f.code].CODE for f in result.findings}


def file_states(
    changed: Sequence[tuple[str, FileResult]], selection: Selection, jobs: int = 1
) -> list[FileStates]:
    """Per-rule states of every changed file, ``jobs`` files at a time."""
    active = [active_rules(result) for _, result in changed]
    work = [
        (result.source.text, str(result.path), selection, result.new_text, rules)
        for (_, result), rules in zip(changed, active)
    ]
    if jobs <= 1 or len(work) < 2:
        all_states = list(map(_states_job, work))
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            all_states = list(pool.map(_states_job, work))
    return [
        FileStates(path, result, states, rules)
        for (path, result), states, rules in zip(changed, all_states, active)
    ]


def plan_commits(files: Sequence[FileStates], selection: Selection) -> list[RuleCommit]:
    """One commit per rule that changed something, in pipeline order."""
    commits = []
    last_state = {f.path: f.states[0] for f in files}
    pending: dict[str, list[str]] = {}  # path -> codes whose state could not be made alone
    for k, rule in enumerate(selection.rules(), start=1):
        commit = RuleCommit(rule)
        for f in files:
            state = f.states[k]
            if state is None:
                if rule.CODE in f.active:
                    pending.setdefault(f.path, []).append(rule.CODE)
                continue
            if state == last_state[f.path]:
                continue
            last_state[f.path] = state
            commit.contents[f.path] = f.result.source.encode(state)
            if f.result.applied.get(rule.CODE):
                commit.edits[f.path] = f.result.applied[rule.CODE]
            found = sum(1 for finding in f.result.findings if finding.code in rule.FINDINGS)
            if found:
                commit.findings[f.path] = found
            if f.path in pending:
                commit.folded[f.path] = pending.pop(f.path)
        if commit.contents:
            commits.append(commit)
    return commits
