"""The pull-request description: a context of plain data rendered by a jinja2 template.

The template shipped in ``templates/pr_body.md.j2`` can be replaced with ``--pr-template FILE``;
README.md ("Pull requests") lists the variables a template can use.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import jinja2

import codemods
from codemods._base import MARKER_PREFIX

from .. import __version__
from ..engine import FileResult
from ..linemap import LineMap
from ..verify.render import LOCAL_SCALAR
from .commits import RuleCommit

TEMPLATES = Path(__file__).parent / "templates"
DEFAULT_TEMPLATE = "pr_body.md.j2"
TPU_INSTALL = "pip install torch==2.9.0 'torch_xla[tpu]==2.9.0'"


class TemplateError(Exception):
    """The template cannot be read, parsed or rendered; the message names the file and line."""


@dataclass
class RunCommand:
    """The training script the PR is about (from --verify), to show how to run it on a TPU."""

    script: str  # relative to the top of the work tree
    args: list[str] = field(default_factory=list)

    def shell(self, prefix: str = "") -> str:
        return prefix + shlex.join(["python", self.script, *self.args])


def load_template(path: Path | None) -> jinja2.Template:
    """The shipped template, or the user's; raises TemplateError with file:line on a bad one."""
    directory, name = (TEMPLATES, DEFAULT_TEMPLATE) if path is None else (path.parent, path.name)
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(directory)),
        undefined=jinja2.StrictUndefined,  # a misspelt variable is an error, not an empty string
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # Markdown, not HTML
    )
    environment.filters["loss"] = _loss
    environment.filters["sci"] = _sci
    environment.filters["md"] = _markdown_cell
    environment.filters["fallback_ops"] = _fallback_ops
    try:
        return environment.get_template(name)
    except jinja2.TemplateNotFound:
        raise TemplateError(f"{path}: no such template file") from None
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"{exc.filename or path}:{exc.lineno}: {exc.message}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TemplateError(f"{path}: cannot read: {exc}") from None


def render(template: jinja2.Template, context: dict) -> str:
    try:
        text = template.render(**context)
    except jinja2.TemplateError as exc:
        where = f"{template.filename}:{_error_line(exc, template)}"
        raise TemplateError(f"{where}: {exc}") from None
    return text if text.endswith("\n") else text + "\n"


def _error_line(exc: Exception, template: jinja2.Template) -> str:
    lineno = getattr(exc, "lineno", None)
    if lineno:
        return str(lineno)
    traceback = exc.__traceback__
    line = "?"
    while traceback is not None:  # jinja2 maps rendering frames back to template lines
        if traceback.tb_frame.f_code.co_filename == template.filename:
            line = str(traceback.tb_lineno)
        traceback = traceback.tb_next
    return line


def build_context(
    *,
    branch: str,
    base: str,
    commits: Sequence[RuleCommit],
    results: Sequence[tuple[str, FileResult]],
    failed: Sequence[str] = (),
    left_out: Sequence[str] = (),
    verify: dict | None = None,
    run: RunCommand | None = None,
    verify_command: str | None = None,
) -> dict:
    """Everything a template may use: plain lists, dicts, strings and numbers."""
    changed = [(path, result) for path, result in results if result.changed]
    rule_rows = _rules(commits)
    files = [
        {
            "path": path,
            "edits": {code: n for code, n in result.applied.items()},
            "findings": len(result.findings),
        }
        for path, result in changed
    ]
    findings = [finding for path, result in results for finding in _findings(path, result)]
    return {
        "version": __version__,
        "branch": branch,
        "base": base,
        "commits": [_commit(commit) for commit in commits],
        "rules": rule_rows,
        "files": files,
        "findings": findings,
        "totals": {
            "files": len(changed),
            "rules": len(rule_rows),
            "rewrites": sum(sum(result.applied.values()) for _, result in changed),
            "findings": len(findings),
        },
        "numerics": [row for row in rule_rows if row["numerics"]],
        "failed": list(failed),
        "left_out": list(left_out),
        "verify": verify,
        "verify_command": verify_command,
        "run": (
            None
            if run is None
            else {
                "script": run.script,
                "args": list(run.args),
                "command": run.shell(),
                "tpu_command": run.shell("PJRT_DEVICE=TPU "),
            }
        ),
        "tpu_install": TPU_INSTALL,
    }


def _commit(commit: RuleCommit) -> dict:
    return {
        "sha": commit.sha,
        "short_sha": (commit.sha or "")[:10],
        "subject": commit.subject(),
        "code": commit.rule.CODE,
        "name": commit.rule.NAME,
        "files": commit.paths,
        "revert_conflicts": commit.revert_conflicts,
    }


def _rules(commits: Sequence[RuleCommit]) -> list[dict]:
    return [
        {
            "code": commit.rule.CODE,
            "name": commit.rule.NAME,
            "safety": commit.rule.SAFETY.value,
            "summary": commit.rule.SUMMARY,
            "numerics": commit.rule.NUMERICS or "",
        }
        for commit in commits
    ]


def _findings(path: str, result: FileResult) -> list[dict]:
    """Findings with the line they are on at the branch (the TODO marker above the statement)."""
    if not result.findings or result.source is None:
        return []
    final = result.new_text if result.changed else result.source.text
    lines = final.splitlines()
    to_final = LineMap(result.source.text, final)  # maps original lines onto the final text
    rows = []
    for finding in result.findings:
        line = _marker_line(lines, to_final.line(finding.line), finding.code)
        rule = codemods.rule_by_code(finding.code)
        rows.append(
            {
                "path": path,
                "line": line,
                "link": f"[{path}:{line}]({path}#L{line})",
                "code": finding.code,
                "message": finding.message,
                "summary": str(rule.FINDINGS.get(finding.code, "")),
            }
        )
    return rows


def _marker_line(lines: Sequence[str], statement_line: int, code: str) -> int:
    """The line of the ``code`` marker nearest to ``statement_line`` (markers sit just above
    their statement); the statement's own line when the file has no such marker."""
    wanted = f"{MARKER_PREFIX} {code}"
    markers = [n for n, text in enumerate(lines, start=1) if text.lstrip().startswith(wanted)]
    if not markers:
        return statement_line
    return min(markers, key=lambda n: (abs(statement_line - n), n > statement_line))


def _loss(value) -> str:
    return "–" if value is None else f"{value:.8g}"


def _sci(value) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return f"{value:.1e}"


def _fallback_ops(ops) -> str:
    """The CPU-fallback op list of the verify JSON, with the one everybody meets explained."""
    named = [
        f"`{op}` (.item()/float()/bool() reads)" if op == LOCAL_SCALAR else f"`{op}`" for op in ops
    ]
    return ", ".join(named) or "none"


def _markdown_cell(value) -> str:
    """Text safe inside a Markdown table cell."""
    return str(value).replace("|", "\\|").replace("\n", " ")
