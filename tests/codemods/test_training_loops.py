"""Which loops are training loops (codemods/_loops.py): a walk over parameters or optimizers
is bookkeeping; a count of steps is a step loop, even over the parsed options named ``opt``."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.codemod import CodemodContext

from codemods._loops import ModuleIndex
from codemods.tpu119_adopt_device import AdoptDevice


def _the_loop(header: str) -> tuple[ModuleIndex, cst.For]:
    module = cst.parse_module(f"{header}\n    loss.backward()\n")
    index = ModuleIndex(AdoptDevice(CodemodContext()), module)
    return index, index.for_loops[0]


@pytest.mark.parametrize(
    "header",
    [
        "for i in range(opt.steps):",
        "for epoch in range(opt.niter):",
        "for step in range(args.num_params):",
        "for batch in loader:",
    ],
)
def test_step_loops(header):
    index, loop = _the_loop(header)
    assert not index.is_bookkeeping_loop(loop)


@pytest.mark.parametrize(
    "header",
    [
        "for group in opt.param_groups:",
        "for p in model.parameters():",
        "for i in range(len(params)):",
        "for i in range(len(optimizer.param_groups)):",
        "for state in optimizer.state.values():",
    ],
)
def test_bookkeeping_loops(header):
    index, loop = _the_loop(header)
    assert index.is_bookkeeping_loop(loop)
