"""``check --format sarif|markdown|text|json``: SARIF valid against the official 2.1.0 schema,
markdown content, and the migration statistics on a file whose numbers are known."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import codemods
from migrate.cli import main
from migrate.engine import Selection, migrate_file
from migrate.report import RunSummary, Statistics

SCHEMA = json.loads((Path(__file__).parent / "sarif-schema-2.1.0.json").read_text())

# Known numbers: TPU101 rewrites the device (1), TPU127 .cuda() (1), TPU104 the synchronize (1);
# the stream is a finding (TPU201) and the cudnn flag a rewrite suppressed by its comment: 3 / 4.
TRAIN = """\
import torch

device = torch.device("cuda")
model = Net().cuda()
torch.cuda.synchronize()
s = torch.cuda.Stream()
torch.backends.cudnn.benchmark = True  # tpu-migrate: ignore[TPU104]
x = 1  # tpu-migrate: ignore[TPU201]
"""
BROKEN = "import torch\n\ndef f(:\n    pass\n"


@pytest.fixture
def checked(project, monkeypatch):
    root = project(
        {
            "pkg/train.py": TRAIN,
            "pkg/broken.py": BROKEN,
            "pkg/util.py": "print('no torch here')\n",
            "pkg/done.py": "import torch\nimport torch_xla\n\ndevice = torch_xla.device()\n",
        }
    )
    monkeypatch.chdir(root)

    def check(capsys, *argv: str) -> tuple[int, str]:
        code = main(["check", "-j", "1", *argv])
        return code, capsys.readouterr().out

    return check


def test_statistics_of_a_known_file(project):
    root = project({"train.py": TRAIN})
    result = migrate_file(root / "train.py", Selection.from_options())
    stats = Statistics.of(result)
    assert dict(stats.rewrites) == {"TPU101": 1, "TPU127": 1, "TPU104": 1}
    assert dict(stats.findings) == {"TPU201": 1}
    assert (stats.rewritten, stats.left, stats.constructs) == (3, 1, 4)
    assert stats.migrated_percent == 75.0
    assert Statistics().migrated_percent is None and Statistics().percent_text() == "n/a"
    summary = RunSummary.of([result, result])
    assert summary.statistics.to_dict() == {
        "rewrites": {"TPU101": 2, "TPU104": 2, "TPU127": 2},
        "findings": {"TPU201": 2},
        "constructs": 8,
        "migrated_percent": 75.0,
    }


def test_text_report_shows_statistics(checked, capsys):
    code, out = checked(capsys, "pkg")
    assert code == 2  # broken.py
    assert "Statistics (migrated % = rewrites / (rewrites + findings left for a human)):" in out
    assert "pkg/train.py     3 rewritten     1 left     75% migrated" in out
    assert "total            3 rewritten     1 left     75% migrated" in out
    assert "pkg/done.py" not in out  # nothing to migrate there: not in the table


def test_json_report_has_statistics_per_file_and_in_total(checked, capsys):
    _, out = checked(capsys, "--format", "json", "pkg")
    document = json.loads(out)
    files = {f["path"]: f for f in document["files"]}
    assert files["pkg/train.py"]["statistics"] == {
        "rewrites": {"TPU101": 1, "TPU104": 1, "TPU127": 1},
        "findings": {"TPU201": 1},
        "constructs": 4,
        "migrated_percent": 75.0,
    }
    assert files["pkg/done.py"]["statistics"]["migrated_percent"] is None
    summary = document["summary"]
    assert (summary["constructs"], summary["migrated_percent"]) == (4, 75.0)
    assert summary["unused_suppressions"] == 1


def test_markdown_report(checked, capsys):
    code, out = checked(capsys, "--format", "markdown", "pkg")
    assert code == 2
    assert out.startswith("# tpu-migrate check\n")
    assert "**Migrated: 75%** of 4 torch constructs: 3 rewritten" in out
    assert "| file | rewrites | findings left | migrated |" in out
    assert "| `pkg/train.py` | TPU101 x1, TPU104 x1, TPU127 x1 | TPU201 x1 | 75% |\n" in out
    assert "| **total** | TPU101 x1, TPU104 x1, TPU127 x1 | TPU201 x1 | 75% |\n" in out
    assert "done.py" not in out  # nothing to migrate there
    assert (
        "- `pkg/train.py:6:5` **TPU201** CUDA streams have no XLA equivalent; "
        "XLA orders device work itself" in out
    )
    assert "## Unused suppressions\n\n- `pkg/train.py:8:8` unused suppression of TPU201" in out
    assert "## Files that could not be processed\n\n- `pkg/broken.py:3` syntax error" in out


def test_markdown_escapes_table_cells(project, capsys, monkeypatch):
    root = project({"a|b.py": TRAIN})
    monkeypatch.chdir(root)
    main(["check", "-j", "1", "--format", "markdown", "."])
    assert "| `a\\|b.py` |" in capsys.readouterr().out


def sarif_of(checked, capsys, *argv: str) -> dict:
    _, out = checked(capsys, "--format", "sarif", *argv)
    return json.loads(out)


def schema_errors(document: dict) -> list[str]:
    validator = jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]


def test_sarif_is_valid_against_the_official_schema(checked, capsys):
    document = sarif_of(checked, capsys, "pkg")
    assert schema_errors(document) == []
    run = document["runs"][0]
    # the run has every kind of content the schema must accept
    levels = {result["level"] for result in run["results"]}
    assert levels == {"warning", "note"}
    assert run["invocations"][0]["toolExecutionNotifications"]


def test_the_schema_check_can_fail(checked, capsys):
    document = sarif_of(checked, capsys, "pkg")
    del document["runs"][0]["results"][0]["message"]
    document["runs"][0]["results"][1]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert len(schema_errors(document)) == 2


def test_sarif_describes_every_rule_and_finding_code(checked, capsys):
    driver = sarif_of(checked, capsys, "pkg")["runs"][0]["tool"]["driver"]
    assert driver["name"] == "tpu-migrate" and driver["version"]
    rules = {rule["id"]: rule for rule in driver["rules"]}
    for rule in codemods.PIPELINE:
        descriptor = rules[rule.CODE]
        assert descriptor["shortDescription"]["text"] == rule.SUMMARY
        assert descriptor["fullDescription"]["text"]
        assert "What it does" in descriptor["help"]["text"]
        assert descriptor["defaultConfiguration"]["level"] == "note"
        for code in rule.FINDINGS:
            doc = rule.finding_doc(code)
            assert rules[code]["shortDescription"]["text"] == doc.summary
            assert rules[code]["help"]["text"] == doc.full_text()
            assert rules[code]["defaultConfiguration"]["level"] == "warning"
    assert "unused-suppression" in rules


def test_sarif_results_locations_and_statistics(checked, capsys):
    run = sarif_of(checked, capsys, "pkg")["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    by_rule: dict[str, list[dict]] = {}
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        by_rule.setdefault(result["ruleId"], []).append(result)
    [finding] = by_rule["TPU201"]
    location = finding["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "pkg/train.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 6, "startColumn": 5}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == Path.cwd().as_uri() + "/"

    # pending rewrites, as notes at the lines apply would change
    def regions(code: str) -> list[dict]:
        return [r["locations"][0]["physicalLocation"]["region"] for r in by_rule[code]]

    assert regions("TPU101") == [{"startLine": 3, "startColumn": 1, "endLine": 3}]
    assert regions("TPU127") == [{"startLine": 4, "startColumn": 1, "endLine": 4}]
    assert regions("TPU104") == [{"startLine": 5, "startColumn": 1, "endLine": 5}]
    assert all(
        r["level"] == "note" for code in ("TPU101", "TPU127", "TPU104") for r in by_rule[code]
    )
    assert regions("unused-suppression") == [{"startLine": 8, "startColumn": 8}]
    [error] = run["invocations"][0]["toolExecutionNotifications"]
    assert error["level"] == "error" and error["message"]["text"].startswith("syntax error")
    error_location = error["locations"][0]["physicalLocation"]
    assert error_location["artifactLocation"]["uri"] == "pkg/broken.py"
    assert error_location["region"]["startLine"] == 3
    assert run["invocations"][0]["executionSuccessful"] is False
    statistics = run["properties"]["statistics"]
    assert (statistics["constructs"], statistics["migrated_percent"]) == (4, 75.0)
    artifact = {a["location"]["uri"]: a for a in run["artifacts"]}["pkg/train.py"]
    assert artifact["properties"]["statistics"]["rewrites"] == {
        "TPU101": 1,
        "TPU104": 1,
        "TPU127": 1,
    }


def test_sarif_of_a_clean_run_is_valid_too(project, capsys, monkeypatch):
    root = project({"done.py": "import torch\nimport torch_xla\n"})
    monkeypatch.chdir(root)
    assert main(["check", "-j", "1", "--format", "sarif", "."]) == 0
    document = json.loads(capsys.readouterr().out)
    assert schema_errors(document) == []
    assert document["runs"][0]["results"] == []
    assert document["runs"][0]["invocations"][0]["executionSuccessful"] is True


def test_sarif_paths_outside_the_current_directory_are_relative_to_their_root(
    project, capsys, monkeypatch, tmp_path
):
    root = project({"repo/train.py": TRAIN})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    main(["check", "-j", "1", "--format", "sarif", str(root / "repo")])
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == (root / "repo").as_uri() + "/"
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]
    }
    assert uris == {"train.py"}


def test_rewrite_regions_do_not_include_inserted_todo_markers(project):
    source = (
        "import torch\n\ntorch.cuda.synchronize()\nx = 1\ny = 2\nz = 3\ns = torch.cuda.Stream()\n"
    )
    root = project({"t.py": source})
    result = migrate_file(root / "t.py", Selection.from_options())
    assert [f.line for f in result.findings] == [7]
    assert result.rewrite_regions == {"TPU104": [(3, 3)]}
