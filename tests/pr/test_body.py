"""The PR description: shipped template, --pr-template, findings links, verify JSON rendering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from migrate.engine import Selection, migrate_file
from migrate.pr.body import build_context, load_template, render
from migrate.pr.commits import file_states, plan_commits
from tests.pr.conftest import git
from tests.pr.test_branch import CUDA_STREAM, PROJECT

DATA = Path(__file__).resolve().parent / "data"


def test_template_override_gets_the_context(make_repo, tpu_migrate, tmp_path):
    repo = make_repo(PROJECT)
    template = tmp_path / "mine.md.j2"
    template.write_text(
        "{{ branch }} from {{ base }}:{% for c in commits %} {{ c.code }}({{ c.files | length }})"
        "{% endfor %}; {{ totals.findings }} finding(s) {{ findings[0].link }}\n"
    )
    body = tmp_path / "out.md"
    outcome = tpu_migrate(
        repo,
        "apply",
        ".",
        "--branch",
        "mig",
        "--pr-template",
        str(template),
        "--pr-body",
        str(body),
    )
    assert outcome.code == 0, outcome.err
    expected = (
        "mig from main: TPU105(1) TPU127(1) TPU101(2) TPU104(3); 1 finding(s) "
        "[pkg/c.py:4](pkg/c.py#L4)\n"
    )
    assert body.read_text() == expected
    assert expected in outcome.out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{% for x in commits %}\n{{ x }\n", "mine.md.j2:2: unexpected '}'"),
        ("ok\n{{ no_such_variable }}\n", "mine.md.j2:2: 'no_such_variable' is undefined"),
    ],
    ids=["syntax", "undefined"],
)
def test_a_broken_template_is_reported_with_its_line(
    make_repo, tpu_migrate, tmp_path, text, message
):
    repo = make_repo(PROJECT)
    template = tmp_path / "mine.md.j2"
    template.write_text(text)
    outcome = tpu_migrate(repo, "apply", ".", "--branch", "mig", "--pr-template", str(template))
    assert message in outcome.err
    if "syntax" in message or "unexpected" in message:  # found before anything is written
        assert outcome.code == 3
        assert git(repo, "branch", "--list", "mig") == ""
    else:  # found while rendering: the branch exists, the way back is printed
        assert outcome.code == 2
        assert "git branch -D mig" in outcome.err


def test_missing_template_is_a_usage_error(make_repo, tpu_migrate, tmp_path):
    repo = make_repo(PROJECT)
    outcome = tpu_migrate(
        repo, "apply", ".", "--branch", "mig", "--pr-template", str(tmp_path / "nope.j2")
    )
    assert outcome.code == 3 and "nope.j2: no such template file" in outcome.err


def test_default_body_has_the_table_findings_links_and_tpu_instructions(make_repo, tpu_migrate):
    repo = make_repo(PROJECT)
    outcome = tpu_migrate(repo, "apply", ".", "--branch", "mig")
    assert outcome.code == 0, outcome.err
    body = (repo / ".git" / "tpu-migrate" / "mig.md").read_text()
    assert body in outcome.out
    assert "| file | TPU105 | TPU127 | TPU101 | TPU104 | findings |" in body
    assert "| `pkg/c.py` |  | 1 |  |  | 1 |" in body
    assert "| `a.py` | 2 |  |  |  |  |" in body
    link = "[pkg/c.py:4](pkg/c.py#L4) **TPU201** CUDA streams have no XLA equivalent"
    assert f"- [ ] {link}" in body
    assert "TODO(tpu-migrate): TPU201" in (repo / "pkg/c.py").read_text().splitlines()[3]
    assert "PJRT_DEVICE=TPU python path/to/train.py" in body
    assert "Not run. To compare the original" in body
    shas = git(repo, "rev-list", "--reverse", "main..mig").split()
    for sha in shas:
        assert f"| {sha[:10]} |" in body


def stored_verify() -> dict:
    return json.loads((DATA / "verify_mlp_equivalent.json").read_text())


def context_for(tmp_path: Path, verify: dict | None) -> dict:
    path = tmp_path / "pkg" / "c.py"
    path.parent.mkdir(parents=True)
    path.write_text(CUDA_STREAM)
    selection = Selection.from_options()
    result = migrate_file(path, selection)
    changed = [("pkg/c.py", result)]
    commits = plan_commits(file_states(changed, selection), selection)
    for number, commit in enumerate(commits):
        commit.sha = f"{number:040d}"
    return build_context(branch="mig", base="main", commits=commits, results=changed, verify=verify)


def test_stored_verify_json_is_rendered(tmp_path):
    verify = stored_verify()
    body = render(load_template(None), context_for(tmp_path, verify))
    assert f"**Verdict: {verify['verdict']}** — {verify['reason']}." in body
    for step in verify["steps"]:
        row = (
            f"| {step['step']} | {step['original_loss']:.8g} | {step['migrated_loss']:.8g} | "
            f"{step['rel_diff']:.1e} | ok |"
        )
        assert row in body
    hygiene = verify["hygiene"]
    assert (
        f"| graph compilations | {hygiene['compilations']} "
        f"({hygiene['compilations_after_warmup']} after warm-up) |"
    ) in body
    assert f"| executions per step | {hygiene['executions_per_step']:.2f} | 1.00 |" in body
    assert "| ops that fell back to the CPU | `aten::_local_scalar_dense` (.item()" in body
    assert f"Final parameters: {verify['params']['count']} tensors" in body
    assert verify["notes"][0] in body


def test_a_failed_verification_shows_the_failure(tmp_path):
    verify = stored_verify()
    verify.update(
        verdict="failed",
        reason="the migrated run failed: exit 1",
        steps=[],
        params=None,
        hygiene=None,
        failure={"side": "migrated", "message": "exit 1", "stderr_tail": "RuntimeError: boom"},
    )
    body = render(load_template(None), context_for(tmp_path, verify))
    assert "**CPU verification: failed** — the migrated run failed: exit 1." in body
    assert "The migrated run failed: exit 1" in body and "RuntimeError: boom" in body
    assert "| step |" not in body


def test_folded_state_goes_into_the_next_rules_commit(tmp_path):
    path = tmp_path / "c.py"
    path.write_text(CUDA_STREAM)
    selection = Selection.from_options()
    result = migrate_file(path, selection)
    states = file_states([("c.py", result)], selection)
    codes = selection.rule_codes
    k = codes.index("TPU127") + 1
    # As if TPU127's intermediate state could not be made: the rules after it that did nothing
    # here repeat the state before them, so theirs is missing too.
    missing = states[0].states[k]
    while states[0].states[k] == missing:
        states[0].states[k] = None
        k += 1
    commits = plan_commits(states, selection)
    assert [c.rule.CODE for c in commits] == ["TPU104"]
    assert commits[0].folded == {"c.py": ["TPU127"]}
    assert "with the changes of TPU127" in commits[0].message()
    assert commits[0].contents["c.py"] == result.new_bytes()
