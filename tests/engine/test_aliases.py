"""The code of a rule that was split keeps naming all of its parts (codemods/_aliases.py):
selection, ignore, suppressions, options, `explain` and `rules`.

Checked on two stand-in rules, as if TPU196 had been split into TPU196 and TPU187 (a part's code
is the next free one, so it may share no prefix with the old code but ``TPU1``)."""

from __future__ import annotations

import json
import textwrap
from typing import ClassVar

import libcst as cst
import pytest

import codemods
import migrate.rule_table
from codemods import _aliases
from codemods._base import Safety, Suppression, TpuCodemod
from migrate.cli import main
from migrate.engine import Selection, migrate_file
from tests.cli.test_config import pyproject


class _Renames(TpuCodemod):
    """What it does / Why / Example: renames ``OLD`` to ``NEW`` (for the plumbing)."""

    OLD: ClassVar[str]
    NEW: ClassVar[str]
    OPTIONS: ClassVar[dict[str, object]] = {"suffix": ""}

    def leave_Name(self, original_node, updated_node):
        if original_node.value != self.OLD:
            return updated_node
        self.record_rewrite()
        return cst.Name(self.NEW + str(self.option("suffix")))


class _Main(_Renames):
    CODE, NAME, SUMMARY, SAFETY = "TPU196", "main-part", "renames a", Safety.SAFE
    OLD, NEW = "a", "A"
    OPTIONS: ClassVar[dict[str, object]] = {"suffix": "", "only_main": 0}


class _Part(_Renames):
    CODE, NAME, SUMMARY, SAFETY = "TPU187", "split-part", "renames b", Safety.SAFE
    OLD, NEW = "b", "B"
    FINDINGS = {"TPU287": "a finding of the part"}


@pytest.fixture
def split(monkeypatch):
    monkeypatch.setattr(codemods, "PIPELINE", (*codemods.PIPELINE, _Main, _Part))
    monkeypatch.setattr(_aliases, "ALIASES", {"TPU196": ("TPU187",)})
    monkeypatch.setattr(migrate.rule_table, "ALIASES", {"TPU196": ("TPU187",)})


def selected(select=(), ignore=()) -> list[str]:
    codes = [r.CODE for r in codemods.select_rules(select, ignore)]
    return [code for code in codes if code in ("TPU196", "TPU187")]


@pytest.mark.parametrize(
    "select, ignore, expected",
    [
        ((), (), ["TPU196", "TPU187"]),
        (["TPU196"], (), ["TPU196", "TPU187"]),  # the old code: every part
        (["tpu196"], (), ["TPU196", "TPU187"]),
        ((), ["TPU196"], []),
        (["TPU1"], ["TPU196"], []),  # more specific than the prefix
        (["TPU19"], (), ["TPU196", "TPU187"]),  # a prefix of the old code covers its parts
        (["TPU18"], (), ["TPU187"]),  # the part's own prefix does not cover the main part
        (["TPU196"], ["TPU187"], ["TPU196"]),  # the part by its own code wins over the alias
        (["TPU187"], ["TPU196"], ["TPU187"]),
        (["TPU187"], (), ["TPU187"]),
        (["TPU19"], ["TPU18"], ["TPU196"]),  # equal length: the part's own prefix wins
    ],
)
def test_the_old_code_selects_and_ignores_every_part(split, select, ignore, expected):
    assert selected(select, ignore) == expected


def test_parts_and_their_old_code(split):
    assert codemods.parts_of("tpu196") == ("TPU196", "TPU187")
    assert codemods.parts_of("TPU187") == ("TPU187",)
    assert codemods.split_from("TPU187") == "TPU196"
    assert codemods.split_from("TPU196") is None


def test_findings_of_a_part_follow_its_selection(split):
    selection = Selection.from_options(["TPU196", "TPU2"])
    assert {"TPU196", "TPU187", "TPU287"} <= selection.active_codes()
    assert "TPU287" not in Selection.from_options(["TPU196", "TPU2"], ["TPU187"]).active_codes()
    # a finding selected alone runs the part that reports it, not the old code's main part
    assert Selection.from_options(["TPU287"]).rule_codes == ("TPU187",)


def test_a_suppression_of_the_old_code_suppresses_every_part(split, project):
    assert Suppression(1, ("TPU196",)).token_for("TPU187") == "TPU196"
    assert Suppression(1, ("TPU19",)).token_for("TPU187") == "TPU19"
    assert Suppression(1, ("TPU196",)).token_for("TPU287") is None  # a finding: by its own code
    source = "import torch\n\nx = a + b  # tpu-migrate: ignore[TPU196]\ny = a + b\n"
    root = project({"t.py": source})
    result = migrate_file(root / "t.py", Selection.from_options(["TPU196"]))
    assert result.new_text.splitlines()[2:] == [
        "x = a + b  # tpu-migrate: ignore[TPU196]",
        "y = A + B",
    ]
    assert result.applied == {"TPU196": 1, "TPU187": 1}
    assert result.unused_suppressions == []
    # only the part runs: the old code still hides its rewrite, and is not unused
    part_only = migrate_file(root / "t.py", Selection.from_options(["TPU187"]))
    assert part_only.new_text.splitlines()[2:] == [
        "x = a + b  # tpu-migrate: ignore[TPU196]",
        "y = a + B",
    ]
    assert part_only.unused_suppressions == []


def test_a_suppression_of_the_old_code_that_hides_nothing_is_unused(split, project):
    root = project({"t.py": "import torch\n\nx = 1  # tpu-migrate: ignore[TPU196]\n"})
    result = migrate_file(root / "t.py", Selection.from_options(["TPU187"]))
    assert [(u.line, u.code) for u in result.unused_suppressions] == [(3, "TPU196")]


def test_options_of_the_old_code_reach_the_parts_that_have_them(split):
    by_rule = codemods.options_by_rule({"TPU196": {"suffix": "1", "only_main": 2}})
    assert by_rule == {"TPU196": {"suffix": "1", "only_main": 2}, "TPU187": {"suffix": "1"}}
    # a part's own table wins over its old code's, whichever comes first
    for tables in (
        {"TPU196": {"suffix": "1"}, "TPU187": {"suffix": "2"}},
        {"TPU187": {"suffix": "2"}, "TPU196": {"suffix": "1"}},
    ):
        assert codemods.options_by_rule(tables) == {
            "TPU196": {"suffix": "1"},
            "TPU187": {"suffix": "2"},
        }
    assert codemods.options_by_rule(by_rule) == by_rule  # resolving twice changes nothing


def test_options_table_of_the_old_code_in_pyproject(split, project, capsys):
    root = project(
        {
            "pyproject.toml": pyproject(
                "[tool.tpu-migrate]\nselect = ['TPU196']\n\n"
                "[tool.tpu-migrate.options.TPU196]\nsuffix = '_x'\n"
            ),
            "t.py": "import torch\n\nx = a + b\n",
        }
    )
    assert main(["apply", "-j", "1", "--no-cache", str(root)]) == 0
    assert (root / "t.py").read_text().splitlines()[-1] == "x = A_x + B_x"
    capsys.readouterr()


def test_unknown_option_of_a_split_code_names_its_parts(split, project, capsys):
    root = project(
        {
            "pyproject.toml": pyproject(
                "[tool.tpu-migrate]\n\n[tool.tpu-migrate.options.TPU196]\nsize = 1\n"
            ),
            "t.py": "import torch\n",
        }
    )
    assert main(["check", str(root)]) == 3
    err = capsys.readouterr().err
    assert "options.TPU196.size: TPU196 has no option 'size' nor do its parts TPU187" in err
    assert "(their options: only_main, suffix)" in err


def test_explain_says_what_an_old_code_became(split, capsys):
    assert main(["explain", "TPU196"]) == 0
    out = capsys.readouterr().out
    assert "TPU196 was split into 2 rules" in out
    assert "    TPU196 main-part: renames a (the main part, documented here)" in out
    assert "    TPU187 split-part: renames b" in out
    assert main(["explain", "tpu187"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("TPU187 split-part (safe)\nrenames b\n")
    assert "Split off from TPU196" in out


def test_rules_lists_the_split_codes(split, capsys):
    assert main(["rules"]) == 0
    assert "TPU196  = TPU196, TPU187" in capsys.readouterr().out


def test_aliases_are_data_about_real_rules():
    """Each old code is a rule's code (its main part), each part a rule of its own, split from
    one old code only, and the parts run right after their main part (where the old rule ran)."""
    order = [rule.CODE for rule in codemods.PIPELINE]
    seen: set[str] = set()
    for old, parts in codemods.ALIASES.items():
        assert old in order and parts and not seen & set(parts)
        seen.update(parts)
        assert all(part in order and part not in codemods.ALIASES for part in parts)
        positions = sorted(order.index(code) for code in (old, *parts))
        assert positions == list(range(positions[0], positions[0] + len(positions)))
    assert migrate.rule_table.ALIASES == codemods.ALIASES, "rewrite: python -m migrate.rule_table"


def test_split_rules_are_documented_in_the_readme():
    readme = (migrate.rule_table.Path(__file__).resolve().parents[2] / "README.md").read_text()
    for old, parts in codemods.ALIASES.items():
        for code in (old, *parts):
            assert f"| {code} |" in readme, f"README's rules table lacks {code}"
        assert f"{old} = {' + '.join((old, *parts))}" in readme, f"README lacks the {old} alias"


# ---------------------------------------------------------------- the real splits
LOADER_LOOP = textwrap.dedent("""\
    import torch
    import torch_xla
    from torch.utils.data import DataLoader

    device = torch_xla.device()
    loader = DataLoader(ds, batch_size=8, pin_memory=True)
    for x, y in loader:  # tpu-migrate: ignore[TPU103]
        x = x.to(device, non_blocking=True)
    for x, y in loader:
        x = x.to(device, non_blocking=True)
    """)


def test_tpu103_stands_for_the_loader_wrapper_the_batch_copies_and_pin_memory():
    assert codemods.parts_of("TPU103") == ("TPU103", "TPU122", "TPU123")
    assert [r.CODE for r in codemods.select_rules(["TPU103"])] == ["TPU123", "TPU103", "TPU122"]
    assert {"TPU123", "TPU103", "TPU122"} <= {r.CODE for r in codemods.select_rules(["TPU10"])}
    ignored = {r.CODE for r in codemods.select_rules(ignore=["TPU103"])}
    assert not ignored & {"TPU103", "TPU122", "TPU123"}


def test_a_tpu103_suppression_still_keeps_every_part_off_its_statement(project):
    root = project({"train.py": LOADER_LOOP})
    result = migrate_file(root / "train.py", Selection.from_options())
    assert result.error is None and result.unused_suppressions == []
    lines = result.new_text.splitlines()
    assert "    x = x.to(device, non_blocking=True)" in lines  # the suppressed loop, untouched
    assert lines.count("    x = x.to(device, non_blocking=True)") == 1
    assert "loader = DataLoader(ds, batch_size=8)" in lines
    assert set(result.applied) == {"TPU103", "TPU122", "TPU123"}


def test_explain_tpu103_names_its_parts(capsys):
    assert main(["explain", "TPU103"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("TPU103 parallel-loader (semantic)\n")
    assert "TPU103 was split into 3 rules" in out
    assert "    TPU122 batch-copies: " in out and "    TPU123 pin-memory: " in out
    assert main(["explain", "TPU122"]) == 0
    assert "Split off from TPU103" in capsys.readouterr().out


def test_tpu115_stands_for_closures_throttled_bars_and_meter_findings(project, capsys):
    assert codemods.parts_of("TPU115") == ("TPU115", "TPU124", "TPU125")
    assert [r.CODE for r in codemods.select_rules(["TPU115"])] == ["TPU125", "TPU124", "TPU115"]
    # TPU243 moved with the part that reports it; selected alone, it runs that part only
    assert codemods.rule_by_code("TPU243").CODE == "TPU125"
    assert Selection.from_options(["TPU243"]).rule_codes == ("TPU125",)
    # log_every is TPU124's now; the TPU115 table still sets it
    assert codemods.options_by_rule({"TPU115": {"log_every": 25}}) == {"TPU124": {"log_every": 25}}
    root = project(
        {
            "pyproject.toml": pyproject(
                "[tool.tpu-migrate]\n\n[tool.tpu-migrate.options.TPU115]\nlog_every = 25\n"
            ),
            "t.py": "import torch\n",
        }
    )
    assert main(["check", "-j", "1", str(root)]) == 0
    capsys.readouterr()


AMP_STEP = textwrap.dedent("""\
    import torch

    scaler = torch.cuda.amp.GradScaler()
    with torch.cuda.amp.autocast():
        loss = model(x)
    scaler.scale(loss).backward()  # tpu-migrate: ignore[TPU107]
    scaler.step(optimizer)
    scaler.update()
    """)


def test_tpu107_stands_for_autocast_and_the_grad_scaler():
    assert codemods.parts_of("TPU107") == ("TPU107", "TPU137")
    assert [r.CODE for r in codemods.select_rules(["TPU107"])] == ["TPU107", "TPU137"]
    assert not {"TPU107", "TPU137"} & {r.CODE for r in codemods.select_rules(ignore=["TPU107"])}
    # TPU271 moved with the part that reports it
    assert Selection.from_options(["TPU271"]).rule_codes == ("TPU137",)


def test_a_tpu107_suppression_keeps_the_grad_scaler_part_off_its_line(project):
    root = project({"train.py": AMP_STEP})
    result = migrate_file(root / "train.py", Selection.from_options())
    assert result.error is None and result.unused_suppressions == []
    lines = result.new_text.splitlines()
    assert 'with torch.autocast("xla", dtype=torch.bfloat16):' in lines
    assert "scaler.scale(loss).backward()  # tpu-migrate: ignore[TPU107]" in lines
    assert "scaler.update()" not in lines
    assert result.applied["TPU137"] == 2


DISTRIBUTED = textwrap.dedent("""\
    import os
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP


    def main():
        rank = int(os.environ["RANK"])
        dist.init_process_group("nccl", rank=rank)
        torch.cuda.set_device(rank)  # tpu-migrate: ignore[TPU108]
        model = DDP(net, device_ids=[rank])


    if __name__ == "__main__":
        main()
    """)


def test_tpu108_stands_for_every_distributed_part():
    parts = ("TPU131", "TPU132", "TPU133", "TPU134", "TPU135", "TPU136")
    assert codemods.parts_of("TPU108") == ("TPU108", *parts)
    selected = [r.CODE for r in codemods.select_rules(["TPU108"])]
    assert selected == ["TPU131", "TPU108", *parts[1:]]
    assert not set(selected) & {r.CODE for r in codemods.select_rules(ignore=["TPU108"])}
    assert codemods.rule_by_code("TPU203").CODE == "TPU135"
    assert codemods.rule_by_code("TPU205").CODE == "TPU136"
    # a part named by its own code wins over the alias
    assert [r.CODE for r in codemods.select_rules(["TPU136"], ["TPU108"])] == ["TPU136"]


def test_tpu108_suppression_and_selection_reach_every_part(project):
    root = project({"train.py": DISTRIBUTED})
    result = migrate_file(root / "train.py", Selection.from_options(["TPU108"]))
    assert result.error is None and result.unused_suppressions == []
    lines = result.new_text.splitlines()
    assert "    rank = xr.global_ordinal()" in lines
    assert '    dist.init_process_group("xla", init_method="xla://")' in lines
    assert "    torch.cuda.set_device(rank)  # tpu-migrate: ignore[TPU108]" in lines
    assert "    model = DDP(net, gradient_as_bucket_view=True)" in lines
    assert "    torch_xla.launch(_mp_fn)" in lines
    assert set(result.applied) == {"TPU108", "TPU131", "TPU132", "TPU136"}
    # --ignore TPU108 runs none of its parts
    ignored = migrate_file(root / "train.py", Selection.from_options(ignore=["TPU108"]))
    assert not set(ignored.applied) & {"TPU108", "TPU131", "TPU132", "TPU136"}
    assert '    dist.init_process_group("nccl", rank=rank)' in ignored.new_text.splitlines()


def test_explain_tpu108_names_its_parts(capsys):
    assert main(["explain", "TPU108"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("TPU108 xla-process-group (semantic)\n")
    assert "TPU108 was split into 7 rules" in out
    assert "    TPU136 xla-launch: " in out and "    TPU131 runtime-ranks: " in out
    assert main(["explain", "TPU137"]) == 0
    assert "Split off from TPU107" in capsys.readouterr().out


CHECKPOINTS = textwrap.dedent("""\
    import torch

    sd = torch.load(path)  # tpu-migrate: ignore[TPU109]
    other = torch.load(path)
    torch.save(model.state_dict(), path)
    """)


def test_tpu109_stands_for_saves_and_loads(project, capsys):
    assert codemods.parts_of("TPU109") == ("TPU109", "TPU138")
    assert [r.CODE for r in codemods.select_rules(["TPU109"])] == ["TPU138", "TPU109"]
    assert not {"TPU109", "TPU138"} & {r.CODE for r in codemods.select_rules(ignore=["TPU109"])}
    # a TPU109 suppression still keeps the load (now TPU138's) off its statement
    root = project({"train.py": CHECKPOINTS})
    result = migrate_file(root / "train.py", Selection.from_options())
    assert result.error is None and result.unused_suppressions == []
    lines = result.new_text.splitlines()
    assert "sd = torch.load(path)  # tpu-migrate: ignore[TPU109]" in lines
    assert 'other = torch.load(path, map_location="cpu")' in lines
    assert "xm.save(model.state_dict(), path)" in lines
    assert result.applied == {"TPU109": 1, "TPU138": 1}
    assert main(["explain", "TPU109"]) == 0
    out = capsys.readouterr().out
    assert "TPU109 was split into 2 rules" in out and "    TPU138 checkpoint-loads: " in out


TIED = textwrap.dedent("""\
    import torch.nn as nn


    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(10, 4)
            self.head = nn.Linear(4, 10)
            self.head.weight = self.embed.weight


    model = LM()
    model.to(device)  # tpu-migrate: ignore[TPU117]
    other = LM().to(device)
    """)


def test_tpu117_stands_for_hazard_findings_and_tied_weights(project, capsys):
    assert codemods.parts_of("TPU117") == ("TPU117", "TPU139")
    assert [r.CODE for r in codemods.select_rules(["TPU117"])] == ["TPU139", "TPU117"]
    assert not {"TPU117", "TPU139"} & {r.CODE for r in codemods.select_rules(ignore=["TPU117"])}
    # TPU255 moved with the part that reports it; selected alone, it runs that part only
    assert codemods.rule_by_code("TPU255").CODE == "TPU139"
    assert Selection.from_options(["TPU255"]).rule_codes == ("TPU139",)
    # a TPU117 suppression still keeps the re-tie (now TPU139's) off its statement
    root = project({"model.py": TIED})
    result = migrate_file(root / "model.py", Selection.from_options())
    assert result.error is None and result.unused_suppressions == []
    assert result.new_text == TIED + "other.head.weight = other.embed.weight\n"
    assert result.applied == {"TPU139": 1}
    assert main(["explain", "TPU139"]) == 0
    assert "Split off from TPU117" in capsys.readouterr().out


DEVICE_SCRIPT = textwrap.dedent("""\
    import torch

    use_cuda = torch.cuda.is_available()
    model = Net().cuda()  # tpu-migrate: ignore[TPU101]
    x = torch.zeros(3, device="cuda")
    if use_cuda:
        print("on the accelerator")
    run_device = "cuda"  # tpu-migrate: ignore[TPU101]
    opt = torch.optim.AdamW(model.parameters(), fused=True)  # tpu-migrate: ignore[TPU101]
    """)


def test_tpu101_stands_for_choices_strings_moves_branches_and_fused_optimizers():
    parts = ("TPU101", "TPU126", "TPU127", "TPU128", "TPU129")
    assert codemods.parts_of("TPU101") == parts
    order = ["TPU129", "TPU128", "TPU127", "TPU101", "TPU126"]
    assert [r.CODE for r in codemods.select_rules(["TPU101"])] == order
    assert set(parts) <= {r.CODE for r in codemods.select_rules(["TPU10"])}
    assert not {r.CODE for r in codemods.select_rules(ignore=["TPU101"])} & set(parts)
    assert [r.CODE for r in codemods.select_rules(["TPU101"], ["TPU128"])] == [
        "TPU129",
        "TPU127",
        "TPU101",
        "TPU126",
    ]


def test_a_tpu101_suppression_keeps_every_part_off_its_statement(project):
    root = project({"train.py": DEVICE_SCRIPT})
    result = migrate_file(root / "train.py", Selection.from_options(["TPU101"]))
    assert result.error is None and result.unused_suppressions == []
    assert result.new_text.splitlines() == [
        "import torch",
        "import torch_xla",
        "",
        "model = Net().cuda()  # tpu-migrate: ignore[TPU101]",  # TPU127 kept off
        "x = torch.zeros(3, device=torch_xla.device())",
        'print("on the accelerator")',
        'run_device = "cuda"  # tpu-migrate: ignore[TPU101]',  # TPU126 kept off
        "opt = torch.optim.AdamW(model.parameters(), fused=True)  # tpu-migrate: ignore[TPU101]",
    ]
    assert result.applied == {"TPU128": 2, "TPU127": 1}


def test_explain_tpu101_names_its_parts(capsys):
    assert main(["explain", "TPU101"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("TPU101 device-placement (semantic)\n")
    assert "TPU101 was split into 5 rules" in out
    for part in (
        "TPU126 device-strings",
        "TPU127 device-moves",
        "TPU128 availability-branches",
        "TPU129 fused-optimizers",
    ):
        assert f"    {part}: " in out
    assert main(["explain", "TPU128"]) == 0
    assert "Split off from TPU101" in capsys.readouterr().out


def test_tpu101_in_the_configuration_selects_and_ignores_every_part(project, capsys):
    script = textwrap.dedent("""\
        import torch

        use_cuda = torch.cuda.is_available()
        model = Net().cuda()
        x = torch.zeros(3, device="cuda")
        if use_cuda:
            print("on the accelerator")
        device = torch.device("cuda" if use_cuda else "cpu")
        run_device = "cuda"
        opt = torch.optim.AdamW(model.parameters(), fused=True)
        """)
    parts = {"TPU101", "TPU126", "TPU127", "TPU128", "TPU129"}
    for table, expected in (
        ("select = ['TPU101']", parts),  # each part rewrites something in the script
        ("ignore = ['TPU101']", set()),
    ):
        root = project(
            {"pyproject.toml": pyproject(f"[tool.tpu-migrate]\n{table}\n"), "train.py": script}
        )
        main(["check", "-j", "1", "--no-cache", "--format", "json", str(root)])
        rewrites = json.loads(capsys.readouterr().out)["summary"]["rewrites"]
        assert set(rewrites) & parts == expected, table
