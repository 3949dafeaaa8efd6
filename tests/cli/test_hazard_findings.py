"""The XLA hazard findings (TPU25x) reach the user: `explain` shows why and what to do, `check`
lists them with file and line."""

from __future__ import annotations

import json
import os

import pytest

from migrate.cli import main

HAZARDS = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        pos = torch.arange(4)  # sized by no tensor: TPU145 cannot give it a device
        return self.fc(x[x > 0].view(-1, 4)) + pos.sum()


def train(model, loader, opt):
    for x, y in loader:
        loss = model(x).sum()
        loss.backward()
        opt.step()
        print(y.tolist())
    return model.fc.weight.cpu()
"""


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


@pytest.mark.parametrize(
    "code, summary, why, what_to_do",
    [
        (
            "TPU251",
            "data-dependent shape in step code",
            "every new count compiles a new graph",
            "torch.nonzero_static(x, size=k)",
        ),
        (
            "tpu255",
            "weight tying is undone",
            "1 -> 2",
            "model.tie_weights()",
        ),
        (
            "TPU221",
            "No step boundary could be placed automatically",
            "23 compiles in 22 steps",
            "with gradient accumulation, sync every",
        ),
    ],
)
def test_explain_finding_shows_why_and_what_to_do(capsys, code, summary, why, what_to_do):
    exit_code, out = run(capsys, "explain", code)
    assert exit_code == 0
    assert out.startswith(f"{code.upper()} (a finding of ")
    why_at, what_at = out.index("Why it hurts on a TPU"), out.index("What to do")
    rule_at = out.index("The rule that reports it")
    assert summary in out[:why_at]
    assert why in " ".join(out[why_at:what_at].split())
    assert what_to_do in " ".join(out[what_at:rule_at].split())


def test_check_json_lists_hazards_with_file_and_line(project, capsys):
    root = project({"pkg/net.py": HAZARDS})
    os.chdir(root)
    code, out = run(capsys, "check", "--format", "json", "-j", "1", "pkg")
    assert code == 1
    (entry,) = json.loads(out)["files"]
    assert entry["path"] == "pkg/net.py"
    hazards = [(f["code"], f["line"]) for f in entry["findings"] if f["code"].startswith("TPU25")]
    # forward: arange without device (11), mask gather (12); loop: .tolist() (20). The .cpu()
    # after the loop (21) is not step code.
    assert hazards == [("TPU254", 11), ("TPU251", 12), ("TPU253", 20)]
    messages = {f["code"]: f["message"] for f in entry["findings"]}
    assert "device=x.device" in messages["TPU254"]
    assert (root / "pkg/net.py").read_text() == HAZARDS  # check writes nothing
