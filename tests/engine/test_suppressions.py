"""``# tpu-migrate: ignore[...]``: findings and rewrites suppressed where the comment is, counts
that do not lie, and suppressions that hide nothing reported."""

from __future__ import annotations

import json
import textwrap

import libcst as cst
import pytest
from libcst.codemod import CodemodContext

import codemods
from codemods._base import REWRITES_KEY, Suppression, parse_suppression
from migrate.cli import main
from migrate.engine import Selection, migrate_file
from migrate.suppressions import suppressions_in

ALL = Selection.from_options()


def migrate(project, source: str, selection: Selection = ALL):
    root = project({"train.py": textwrap.dedent(source)})
    result = migrate_file(root / "train.py", selection)
    assert result.error is None, result.error
    return result


def lines_of(result) -> list[str]:
    return (result.new_text or result.source.text).splitlines()


@pytest.mark.parametrize(
    "comment, codes",
    [
        ("# tpu-migrate: ignore", ()),
        ("# tpu-migrate: ignore[TPU201]", ("TPU201",)),
        ("# tpu-migrate: ignore[tpu101, TPU2 ]", ("TPU101", "TPU2")),
        ("# noqa: E501  # tpu-migrate: ignore[TPU104]", ("TPU104",)),
        ("#tpu-migrate:ignore[TPU104,TPU104]", ("TPU104",)),
        ("# TODO(tpu-migrate): TPU201 CUDA streams", None),
        ("# tpu-migrate is great", None),
    ],
)
def test_parse_suppression(comment, codes):
    assert parse_suppression(comment) == codes


def test_suppression_matches_codes_and_prefixes():
    assert Suppression(1).token_for("TPU201") == ""
    assert Suppression(1, ("TPU2",)).token_for("TPU201") == "TPU2"
    assert Suppression(1, ("TPU104", "TPU201")).token_for("TPU201") == "TPU201"
    assert Suppression(1, ("TPU104",)).token_for("TPU201") is None


def test_comments_in_strings_are_not_suppressions():
    text = 's = "# tpu-migrate: ignore"\nx = 1  # tpu-migrate: ignore[TPU101]\n'
    assert [(s.line, s.codes, col) for s, col in suppressions_in(text)] == [(2, ("TPU101",), 8)]


def test_finding_is_suppressed_on_its_line_and_gets_no_marker(project):
    result = migrate(
        project,
        """\
        import torch

        s = torch.cuda.Stream()  # tpu-migrate: ignore[TPU201]
        t = torch.cuda.Stream()
        """,
    )
    assert [(f.code, f.line) for f in result.findings] == [("TPU201", 4)]
    lines = lines_of(result)
    assert lines[2] == "s = torch.cuda.Stream()  # tpu-migrate: ignore[TPU201]"
    assert lines[1] == ""  # no TODO marker above the suppressed line
    assert lines[3].startswith("# TODO(tpu-migrate): TPU201")
    assert result.unused_suppressions == []


def test_finding_prefix_and_bare_ignore(project):
    result = migrate(
        project,
        """\
        import torch

        s = torch.cuda.Stream()  # tpu-migrate: ignore[TPU2]
        e = torch.cuda.Event()  # tpu-migrate: ignore
        """,
    )
    assert result.findings == [] and result.unused_suppressions == []
    assert not result.changed


def test_rewrite_is_suppressed_line_byte_identical_and_not_counted(project):
    source = """\
        import torch

        torch.cuda.synchronize()   #  tpu-migrate: ignore[TPU104]   keep my spacing
        torch.cuda.synchronize()
        """
    result = migrate(project, source)
    lines = lines_of(result)
    assert lines[3] == "torch.cuda.synchronize()   #  tpu-migrate: ignore[TPU104]   keep my spacing"
    assert lines[4] == "xm.wait_device_ops()"
    assert result.applied == {"TPU104": 1}
    assert result.unused_suppressions == []


def test_a_file_whose_only_rewrite_is_suppressed_stays_identical(project):
    source = "import torch\n\ntorch.cuda.synchronize()  # tpu-migrate: ignore[TPU104]\n"
    result = migrate(project, source)
    assert not result.changed
    assert result.applied == {}
    assert result.rewrite_regions == {}
    assert result.unused_suppressions == []


def test_rule_code_prefix_suppresses_every_rule_on_the_line(project):
    result = migrate(
        project,
        """\
        import torch

        model = Net().cuda()  # tpu-migrate: ignore[TPU1]
        other = Net().cuda()
        """,
    )
    assert lines_of(result)[1:] == [
        "import torch_xla",
        "",
        "model = Net().cuda()  # tpu-migrate: ignore[TPU1]",
        "other = Net().to(torch_xla.device())",
    ]
    assert result.applied == {"TPU127": 1}


def test_statement_inserted_after_a_suppressed_line_is_not_inserted(project):
    # TPU110 adds torch_xla.manual_seed(s) after torch.manual_seed(s): a separate statement.
    result = migrate(
        project,
        """\
        import torch
        import torch_xla

        torch.manual_seed(0)  # tpu-migrate: ignore[TPU110]
        torch.manual_seed(1)
        """,
    )
    assert lines_of(result)[3:] == [
        "torch.manual_seed(0)  # tpu-migrate: ignore[TPU110]",
        "torch.manual_seed(1)",
        "torch_xla.manual_seed(1)",
    ]
    assert result.applied == {"TPU110": 1}


LOOPS = """\
    import torch

    def train(model, loader, opt):
        for x in loader:{header}
            opt.zero_grad()
            model(x).sum().backward()
            opt.step(){step}
"""


def test_suppression_on_a_compound_header_covers_its_block(project):
    result = migrate(
        project,
        LOOPS.format(header="  # tpu-migrate: ignore[TPU102]", step=""),
        Selection.from_options(["TPU102"]),
    )
    assert not result.changed  # neither xm.optimizer_step nor a sync, nor their imports
    assert result.applied == {} and result.unused_suppressions == []


def test_suppressed_step_line_gets_no_boundary_planned_after_it(project):
    result = migrate(
        project,
        LOOPS.format(header="", step="  # tpu-migrate: ignore[TPU102]"),
        Selection.from_options(["TPU102"]),
    )
    assert not result.changed
    assert result.applied == {}


def test_unused_suppressions_are_reported_with_their_lines(project):
    result = migrate(
        project,
        """\
        import torch

        x = 1  # tpu-migrate: ignore
        torch.cuda.synchronize()  # tpu-migrate: ignore[TPU104, TPU201]
        y = 2  # tpu-migrate: ignore[TPU999]
        # tpu-migrate: ignore[TPU104]
        torch.cuda.synchronize()
        """,
    )
    unused = [(u.line, u.code, u.known) for u in result.unused_suppressions]
    assert unused == [
        (3, "", True),
        (4, "TPU201", True),  # TPU104 on that line was used
        (5, "TPU999", False),
        (6, "TPU104", True),  # on a line of its own: suppresses nothing
    ]
    assert result.applied == {"TPU104": 1}


def test_codes_that_did_not_run_are_not_called_unused(project):
    source = "import torch\n\nx = 1  # tpu-migrate: ignore[TPU104]\n"
    assert migrate(project, source, Selection.from_options(["TPU101"])).unused_suppressions == []
    assert len(migrate(project, source).unused_suppressions) == 1


def test_suppressions_work_when_a_rule_runs_on_its_own():
    rule = codemods.rule_by_code("TPU104")
    context = CodemodContext()
    source = "import torch\n\ntorch.cuda.synchronize()  # tpu-migrate: ignore[TPU104]\n"
    out = rule(context).transform_module(cst.parse_module(source)).code
    assert out == source
    assert context.scratch[REWRITES_KEY]["TPU104"] == 0


def test_check_reports_unused_suppressions_in_text_and_json(project, capsys, monkeypatch):
    root = project({"a.py": "import torch\n\nx = 1  # tpu-migrate: ignore[TPU201]\n"})
    monkeypatch.chdir(root)
    assert main(["check", "-j", "1", "."]) == 1
    out = capsys.readouterr().out
    assert "a.py:3:8: unused suppression of TPU201: it hides nothing here" in out
    assert "1 unused suppression" in out
    assert main(["check", "--format", "json", "-j", "1", "."]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["files"][0]["unused_suppressions"] == [
        {
            "line": 3,
            "column": 8,
            "code": "TPU201",
            "message": "unused suppression of TPU201: it hides nothing here",
        }
    ]
    assert document["summary"]["unused_suppressions"] == 1


def test_a_rule_code_also_keeps_the_rules_findings_off_the_statement(project):
    result = migrate(
        project, "import torch\n\ns = torch.cuda.Stream()  # tpu-migrate: ignore[TPU104]\n"
    )
    assert result.findings == [] and not result.changed and result.unused_suppressions == []


def test_suppression_inside_a_multi_line_statement_covers_the_statement(project):
    source = "import torch\n\nmodel = Net(  # tpu-migrate: ignore[TPU101]\n    3\n).cuda()\n"
    result = migrate(project, source)
    assert not result.changed and result.unused_suppressions == []


def test_comment_above_a_statement_or_in_its_body_does_not_suppress_the_header(project):
    result = migrate(
        project,
        """\
        import torch

        try:
            s = torch.cuda.Stream()
        except RuntimeError:  # tpu-migrate: ignore[TPU201]
            pass
        """,
    )
    assert [f.code for f in result.findings] == ["TPU201"]
    assert [(u.line, u.code) for u in result.unused_suppressions] == [(5, "TPU201")]


TWO_TRAINING_LOADERS = """\
import torch
from torch.utils.data import DataLoader

train_a = DataLoader(data_a, batch_size=8, shuffle=True)
train_b = DataLoader(data_b, batch_size=8, shuffle=True)  # tpu-migrate: ignore[TPU113]
for loader in (train_a, train_b):
    for x, y in loader:
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
"""


def test_a_suppressed_rewrite_asks_verify_for_no_adjustment_there(project):
    result = migrate(project, TWO_TRAINING_LOADERS, Selection.from_options(["TPU113"]))
    lines = lines_of(result)
    assert "drop_last=True" in lines[3]
    assert lines[4] == TWO_TRAINING_LOADERS.splitlines()[4]
    assert [(a.code, a.kind, a.line) for a in result.adjustments] == [("TPU113", "drop_last", 4)]
