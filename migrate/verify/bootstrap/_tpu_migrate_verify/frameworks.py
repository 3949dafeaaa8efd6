"""What a training framework does differently on XLA than on its GPU path, held equal in both runs.

A framework-managed script (Accelerate, the Hugging Face Trainer, Lightning) is migrated by
configuring the framework for TPUs; the framework then takes its own XLA code path. Where that path
differs from its GPU path in something that is no part of the migration, one run repeats what the
other does, so that the comparison sees the migration and not the framework. Each is counted in
the notes ("framework:NAME").

- Which path (original run, runner.py). Accelerate and transformers take their XLA path whenever
  torch_xla imports, and it is installed for the migrated run: the original run has
  USE_TORCH_XLA=0, so it takes the GPU path it was written for (on the CPU). Counted when the
  original run imports Accelerate ("accelerate").
- Accelerate's shuffle (original run). ``accelerate.data_loader.prepare_data_loader`` gives a
  shuffling loader (a ``RandomSampler``) a ``torch.Generator`` of its own on XLA only, seeded at
  prepare time from the global CPU generator; on the GPU path the sampler draws its seed from the
  global generator when it is iterated, after the DataLoader's own base seed. The runs would read
  different batches from step 1 (measured on an Accelerate text classifier: 4e3 times the bound at
  step 2). The original run makes the same draw and gives the loader and its sampler the same
  generator right before the real ``prepare_data_loader`` (Accelerate 1.x's XLA lines), so both
  runs read the same batches ("accelerate-xla-shuffle"). The Hugging Face Trainer prepares its
  loaders through Accelerate, so this covers it too.
- Lightning's DDP over one device (original run). verify runs both sides on one device, where the
  migrated ``strategy="auto"`` is Lightning's single-device XLA strategy. The original's
  ``strategy="ddp"`` over its one (mapped) GPU would re-seed the global generator at set-up
  (``reset_seed``) and read through a ``DistributedSampler`` seeded with PL_GLOBAL_SEED; a single
  device does neither, so the runs would shuffle differently from step 1. Over one device and one
  node, the original run takes what Lightning picks for ``strategy="auto"`` instead, which
  reduces nothing at world size 1 either ("lightning-ddp-one-device"). On a TPU VM with several
  devices, the migrated run's XLAStrategy reads through the same DistributedSampler as DDP does.
- Lightning's half-precision storage (migrated run). ``XLAPrecision("bf16-true")`` (``"16-true"``)
  does nothing but set ``XLA_USE_BF16=1`` (``XLA_USE_F16=1``): every float32 tensor on the XLA
  device is then stored in that type (torch_xla reads the variable when the first device tensor
  is made). That is mixed precision, so like autocast it is off for the fp32 comparison unless
  --keep-autocast: the variables are put back right after the plugin sets them
  ("lightning-xla-half"; "lightning-xla-half-kept" with --keep-autocast).
"""

from __future__ import annotations

import functools
import os
from collections import Counter

from .patching import replace
from .protocol import Config

KEY = "framework:"
ACCELERATE = KEY + "accelerate"  # the original run imported Accelerate (with USE_TORCH_XLA=0)
SHUFFLE = KEY + "accelerate-xla-shuffle"
LIGHTNING_HALF = KEY + "lightning-xla-half"
LIGHTNING_HALF_KEPT = KEY + "lightning-xla-half-kept"
LIGHTNING_ONE_DEVICE = KEY + "lightning-ddp-one-device"
HALF_STORAGE_VARIABLES = ("XLA_USE_BF16", "XLA_USE_F16")

# Lightning ships the same plugin under the unified package and the standalone ones.
LIGHTNING_XLA_PRECISION_MODULES = (
    "lightning.fabric.plugins.precision.xla",
    "lightning.pytorch.plugins.precision.xla",
    "lightning_fabric.plugins.precision.xla",
    "pytorch_lightning.plugins.precision.xla",
)
LIGHTNING_ACCELERATOR_CONNECTOR_MODULES = (
    "lightning.pytorch.trainer.connectors.accelerator_connector",
    "pytorch_lightning.trainer.connectors.accelerator_connector",
)


def shuffle_as_on_xla(data_loader, notes: Counter) -> None:
    """Original run: ``prepare_data_loader`` seeds a shuffling loader as it does on XLA."""
    import torch
    from torch.utils.data import RandomSampler

    prepare = data_loader.prepare_data_loader

    def prepare_data_loader(dataloader=None, *args, **kwargs):
        on_xla = data_loader.PartialState().distributed_type == data_loader.DistributedType.XLA
        if not on_xla and isinstance(getattr(dataloader, "sampler", None), RandomSampler):
            # Accelerate's XLA branch, line for line.
            generator = torch.Generator(device=torch.get_default_device())
            seed = int(torch.empty((), dtype=torch.int64).random_().item())
            generator.manual_seed(seed)
            dataloader.generator = generator
            dataloader.sampler.generator = generator
            notes[SHUFFLE] += 1
        return prepare(dataloader, *args, **kwargs)

    replace(data_loader, "prepare_data_loader", prepare_data_loader)


def lightning_full_precision(precision_module, config: Config, notes: Counter) -> None:
    """Migrated run: Lightning's XLAPrecision leaves the XLA device in float32."""
    plugin = precision_module.XLAPrecision
    init = plugin.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        before = {name: os.environ.get(name) for name in HALF_STORAGE_VARIABLES}
        init(self, *args, **kwargs)
        for name, value in before.items():
            if os.environ.get(name) == value:
                continue
            if config.keep_autocast:
                notes[LIGHTNING_HALF_KEPT] += 1
            else:
                notes[LIGHTNING_HALF] += 1
                if value is None:
                    del os.environ[name]
                else:
                    os.environ[name] = value

    plugin.__init__ = __init__


def lightning_one_device_strategy(connector_module, notes: Counter) -> None:
    """Original run: a DDP strategy over one device becomes what Lightning picks for one device."""
    connector = connector_module._AcceleratorConnector
    check = connector._check_strategy_and_fallback
    ddp, registry = connector_module.DDPStrategy, connector_module.StrategyRegistry

    @functools.wraps(check)
    def _check_strategy_and_fallback(self) -> None:
        check(self)
        flag = self._strategy_flag
        chosen = registry[flag]["strategy"] if isinstance(flag, str) and flag in registry else flag
        one_device = len(self._parallel_devices) == 1 and self._num_nodes_flag == 1
        if one_device and (isinstance(chosen, ddp) or _subclass(chosen, ddp)):
            notes[LIGHTNING_ONE_DEVICE] += 1
            self._strategy_flag = self._choose_strategy()  # what strategy="auto" gives

    connector._check_strategy_and_fallback = _check_strategy_and_fallback


def _subclass(value, cls) -> bool:
    return isinstance(value, type) and issubclass(value, cls)
