"""TPU107 and TPU108 were each one rule; their parts run where they ran, in an order that gives
what the one rule gave (codemods/__init__.py says why). Each part's cases take what the parts
before it leave: composed in pipeline order, they still make the old rule's multi-part cases."""

from __future__ import annotations

import libcst as cst
import pytest

import codemods
from codemods.testing import CASES
from migrate.engine import Selection, run_pipeline

TORCHRUN_ENTRY = """\
import torch.distributed as dist


def main():
    args = parse()
    dist.init_process_group("nccl")
    train(args)


if __name__ == "__main__":
    main()
"""
DEVICE_AT_IMPORT = """\
import torch.distributed as dist
import torch_xla

device = torch_xla.device()


def setup():
    dist.init_process_group("gloo")


def run(cfg):
    setup()
    train(cfg, device)


if __name__ == "__main__":
    cfg = load_config()
    run(cfg)
"""


def _case(folder: str, name: str) -> str:
    return (CASES / folder / name).read_text(encoding="utf-8")


def _migrated(source: str, select: str) -> str:
    module = cst.parse_module(source)
    return run_pipeline(module, source, Selection.from_options([select]), "case.py")[0]


def test_the_parts_run_where_the_old_rules_ran():
    codes = [rule.CODE for rule in codemods.PIPELINE]
    at = codes.index
    assert at("TPU137") == at("TPU107") + 1  # autocast rewritten before a scaler branch goes
    parts = ["TPU131", "TPU108", "TPU132", "TPU133", "TPU134", "TPU135", "TPU136"]
    assert codes[at("TPU131") : at("TPU131") + len(parts)] == parts
    assert at("TPU137") + 1 == at("TPU131")


@pytest.mark.parametrize(
    "source, expected",
    [
        # rank reads (TPU131), then the sampler's arguments (TPU133)
        (_case("tpu131_runtime_ranks", "invalid_00.py"),
         _case("tpu133_sampler_replicas", "invalid_00.expected.py")),
        # the xla backend (TPU108), then the entry point launched (TPU136)
        (TORCHRUN_ENTRY, _case("tpu136_xla_launch", "invalid_00.expected.py")),
        (DEVICE_AT_IMPORT, _case("tpu136_xla_launch", "invalid_01.expected.py")),
    ],
)  # fmt: skip
def test_tpu108_parts_together_make_the_old_cases(source, expected):
    assert _migrated(source, "TPU108") == expected


@pytest.mark.parametrize("index", ["00", "01"])
def test_tpu107_parts_together_make_the_old_cases(index):
    old = {"00": "07", "01": "08"}[index]
    source = _case("tpu107_mixed_precision", f"invalid_{old}.py")
    expected = _case("tpu137_grad_scaler", f"invalid_{index}.expected.py")
    assert _migrated(source, "TPU107") == expected
