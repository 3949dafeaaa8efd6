"""TPU115 and its parts beyond their cases: the log_every option (TPU124's, which
``[tool.tpu-migrate.options.TPU115]`` still reaches) and the pipeline order."""

from __future__ import annotations

import libcst as cst
from libcst.codemod import CodemodContext

import codemods
from codemods._base import OPTIONS_KEY
from codemods.tpu102_step_boundary import StepBoundary
from codemods.tpu103_parallel_loader import ParallelLoader
from codemods.tpu115_host_syncs import HostSyncs
from codemods.tpu124_progress_bars import ProgressBars
from codemods.tpu125_meter_values import MeterValues

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


def _apply(source: str, options: dict | None = None, rule=ProgressBars) -> str:
    context = CodemodContext(filename="case.py")
    if options is not None:
        context.scratch[OPTIONS_KEY] = codemods.options_by_rule({"TPU115": options})
    return rule(context).transform_module(cst.parse_module(source)).code


def test_progress_bar_interval_comes_from_the_log_every_option():
    assert "LOG_EVERY = 10  #" in _apply(PER_STEP_BAR)
    configured = _apply(PER_STEP_BAR, {"log_every": 25})
    assert "LOG_EVERY = 25  #" in configured
    assert "    if i % LOG_EVERY == 0:\n        pbar.set_postfix(" in configured
    # then TPU115 moves the bar's read into a step closure under that condition
    closure = _apply(configured, rule=HostSyncs)
    assert "    if i % LOG_EVERY == 0:\n        xm.add_step_closure(" in closure


def test_without_tpu124_a_per_step_bar_is_reported_not_moved():
    output = _apply(PER_STEP_BAR, rule=HostSyncs)
    assert "TPU241 per-step host sync: .item() inside the training step" in output
    assert "add_step_closure" not in output


def test_runs_after_the_step_boundary_it_depends_on():
    order = list(codemods.PIPELINE)
    assert order.index(HostSyncs) > order.index(StepBoundary)
    assert order.index(HostSyncs) > order.index(ParallelLoader)
    # its parts run right before it, on the step as TPU102 left it
    assert order.index(StepBoundary) < order.index(MeterValues)
    assert order.index(MeterValues) + 1 == order.index(ProgressBars)
    assert order.index(ProgressBars) + 1 == order.index(HostSyncs)
