"""The analysis the device rules share (codemods/_device_analysis.py): made once per tree in a
file's run, and nothing of one file's kept for the next. That sharing changes no output is
tests/engine/test_plain_libcst.py's to prove (stock libcst copies the tree for every rule, so
there each rule analyses its own copy)."""

from __future__ import annotations

import libcst as cst
from libcst.codemod import CodemodContext

from codemods._device_analysis import DeviceAnalysis
from codemods.tpu128_availability_branches import AvailabilityBranches
from migrate.engine import Selection, rules_that_may_act, run_pipeline
from migrate.fastcst import PLAIN_LIBCST_VARIABLE

# TPU128 and TPU127 leave it as it is, TPU101 rewrites the choice (and drops the flag with its
# last read), TPU126 then has a new tree and nothing to do.
FOUR_DEVICE_RULES = (
    "import torch\n\n"
    "use_cuda = torch.cuda.is_available()\n"
    'device = torch.device("cuda" if use_cuda else "cpu")\n'
    "model = Net().to(device)\n"
    'run(model, device="cpu")\n'
)


def test_rules_given_the_same_tree_share_its_analysis(monkeypatch):
    monkeypatch.delenv(PLAIN_LIBCST_VARIABLE, raising=False)
    analysed = []
    analyse = DeviceAnalysis._analyse

    def recording_analyse(rule, module):
        analysed.append(rule.CODE)
        return analyse(rule, module)

    monkeypatch.setattr(DeviceAnalysis, "_analyse", recording_analyse)
    source, selection = FOUR_DEVICE_RULES, Selection.from_options(select=["TPU101"])
    rules = rules_that_may_act(source, selection)
    assert [rule.CODE for rule in rules] == ["TPU128", "TPU127", "TPU101", "TPU126"]
    new_text, applied, _ = run_pipeline(cst.parse_module(source), source, selection, rules=rules)
    assert applied == {"TPU101": 3}  # the only rule that made a new tree
    assert "torch_xla.device()" in new_text
    assert analysed == ["TPU128", "TPU126"]


def test_a_rule_instance_keeps_nothing_of_the_previous_file():
    """libcst's ``parallel_exec_transform_with_prettyprint``, given a rule instance, hands it
    every file with a new context: the second file's ``args.cuda`` is not the first file's
    availability flag."""
    first = (
        "import torch\n\n"
        "args.cuda = torch.cuda.is_available()\n"
        "loader = DataLoader(ds, shuffle=args.cuda)\n"
    )
    second = "import torch\n\nloader = DataLoader(ds, shuffle=args.cuda)\n"
    rule = AvailabilityBranches(CodemodContext())
    assert "shuffle=True" in rule.transform_module(cst.parse_module(first)).code
    rule.context = CodemodContext()
    assert rule.transform_module(cst.parse_module(second)).code == second
