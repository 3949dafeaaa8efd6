"""Installs the instrumentation once torch (and, on the migrated side, torch_xla) is imported."""

from __future__ import annotations

import atexit

from .protocol import FINISHED, MIGRATED, ORIGINAL, Config
from .recorder import Recorder

RECORDER: Recorder | None = None


def install(config: Config) -> None:
    global RECORDER
    if RECORDER is not None:
        return
    import torch

    from . import neutralize, sandbox

    torch.manual_seed(config.seed)
    sandbox.guard_torch_save(torch)
    RECORDER = Recorder(config)
    neutralize.install(config, RECORDER.notes)
    if config.side == ORIGINAL and config.map_cuda:
        from . import cuda_on_cpu

        cuda_on_cpu.install(RECORDER.notes)
    if config.side == ORIGINAL and config.adjustments:
        from . import align

        align.install(config.adjustments, RECORDER.notes)
    RECORDER.install_hooks()
    if config.side == MIGRATED:
        from . import device_trail

        device_trail.install()
    if config.perturb:
        from . import perturb

        perturb.install(config.perturb, config.seed, config.noise_index)
    atexit.register(write_if_it_trained)


def install_xla(config: Config) -> None:
    if RECORDER is None:  # torch_xla imports torch first, so this does not happen in practice
        install(config)
    from . import xla_probe, xla_standins

    RECORDER.xla = xla_probe.XlaProbe(config.seed)
    xla_standins.install(RECORDER.notes)
    if config.align_rng:
        from . import rng_align

        rng_align.install(config, RECORDER.notes)


def notes(config: Config):
    """The run's notes (the libraries that call for them import torch first)."""
    install(config)
    return RECORDER.notes


def install_inline_loader(parallel_loader) -> None:
    from . import inline_loader

    inline_loader.install(parallel_loader, RECORDER.notes)


def write_if_it_trained() -> None:
    """A process the script started that ran some steps but ended before the limit still reports them."""
    if RECORDER is not None and RECORDER.step and not RECORDER.written:
        RECORDER.finish(FINISHED)
