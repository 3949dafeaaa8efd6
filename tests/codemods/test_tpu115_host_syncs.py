"""TPU115 beyond its embedded cases: the log_every option and the pipeline order."""

from __future__ import annotations

import libcst as cst
from libcst.codemod import CodemodContext

import codemods
from codemods._base import OPTIONS_KEY
from codemods.tpu102_step_boundary import StepBoundary
from codemods.tpu103_parallel_loader import ParallelLoader
from codemods.tpu115_host_syncs import HostSyncs

PER_STEP_BAR = (
    "import torch\n"
    "import torch_xla\n\n"
    "for i, (x, y) in enumerate(pbar):\n"
    "    loss = model(x, y)\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    pbar.set_postfix(loss=loss.item())\n"
    "    torch_xla.sync()\n"
)


def _apply(source: str, options: dict | None = None) -> str:
    context = CodemodContext(filename="case.py")
    if options is not None:
        context.scratch[OPTIONS_KEY] = {"TPU115": options}
    return HostSyncs(context).transform_module(cst.parse_module(source)).code


def test_progress_bar_interval_comes_from_the_log_every_option():
    assert "LOG_EVERY = 10  #" in _apply(PER_STEP_BAR)
    configured = _apply(PER_STEP_BAR, {"log_every": 25})
    assert "LOG_EVERY = 25  #" in configured
    assert "    if i % LOG_EVERY == 0:\n        xm.add_step_closure(" in configured


def test_runs_after_the_step_boundary_it_depends_on():
    order = list(codemods.PIPELINE)
    assert order.index(HostSyncs) > order.index(StepBoundary)
    assert order.index(HostSyncs) > order.index(ParallelLoader)
