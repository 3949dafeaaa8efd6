"""TPU141: a Lightning Trainer (or Fabric) set up for GPUs is set up for the TPU."""

from __future__ import annotations

from migrate.fastcst.facts import FileFacts
from ._base import FindingDoc, Invalid, Safety, Valid
from ._frameworks import FABRIC, LIGHTNING_PACKAGES, LIGHTNING_TRAINER
from ._settings import ConfiguresFramework, Setting

FINDING = "TPU215"
EVERY_DEVICE = "auto"
CUDA_DEVICE_COUNTS = ("torch.cuda.device_count", "torch.accelerator.device_count")
# Strategies that wrap the model in torch DDP (NCCL/Gloo): on a TPU, "auto" picks Lightning's
# XLAStrategy over several devices and its single-device XLA strategy on one.
DDP_STRATEGIES = (
    "ddp",
    "ddp_spawn",
    "ddp_fork",
    "ddp_notebook",
    "ddp_find_unused_parameters_true",
    "ddp_find_unused_parameters_false",
    "ddp_spawn_find_unused_parameters_true",
    "ddp_spawn_find_unused_parameters_false",
    "dp",
)
# Precisions for a GPU -> the one Lightning 2.x runs on XLA (XLAPrecision takes only 32-true,
# 16-true and bf16-true; "bf16-mixed" raises there).
HALF_PRECISIONS = ("16-mixed", "bf16-mixed", "16-true", "16", "bf16", 16)


def _devices(value):
    """Every device, where a GPU script asked for several: on a TPU, Lightning takes only 1, all
    of them ("auto") or one index."""
    if isinstance(value, str):
        text = value.strip()
        if "," in text:  # "0,1"
            return EVERY_DEVICE
        value = int(text) if text.lstrip("-").isdigit() else None
    if isinstance(value, int) and not isinstance(value, bool) and (value == -1 or value > 1):
        return EVERY_DEVICE
    return None


class LightningTrainer(ConfiguresFramework):
    """
    What it does
        Sets up ``lightning.Trainer(...)`` / ``pytorch_lightning.Trainer(...)`` and
        ``lightning.Fabric(...)`` for a TPU, where each value is written (a literal, both arms
        of ``a if c else b``, a local variable, an argparse option's default and choices):

        - ``accelerator="gpu"`` / ``"cuda"`` -> ``"tpu"``;
        - ``devices`` that count CUDA devices (``torch.cuda.device_count()``, ``-1``, a list
          of GPU indexes, a number above 1) -> ``"auto"``: every TPU device; ``1`` stays;
        - ``precision`` ``16`` / ``"16-mixed"`` / ``"bf16-mixed"`` / ``"16-true"`` ->
          ``"bf16-true"``, the half precision Lightning runs on XLA;
        - ``strategy="ddp"`` (and the other DDP spellings) -> ``"auto"``.

        The LightningModule is left to Lightning: no device move, optimizer step, sync or
        loader wrapper is added to its methods or to the model and loaders handed to
        ``trainer.fit(...)`` (CUDA device strings in its methods become ``self.device``).

        Reported (TPU215): a setting this rule cannot trace to a literal, a DeepSpeed or FSDP
        strategy, and ``gpus=`` (gone since Lightning 2.0).

    Why
        On a TPU VM ``Trainer(accelerator="gpu")`` fails at once ("CUDAAccelerator can not run
        on your system"). Lightning 2.x's XLA precision plugin accepts only "32-true",
        "16-true" and "bf16-true" (``precision="bf16-mixed"`` raises "is not supported in
        XLA"), and its TPU docs use a true half precision; bf16 is the TPU's type. The XLA
        accelerator refuses DDP strategies ("can only be used with a SingleDeviceXLAStrategy
        or XLAStrategy"), and ``strategy="xla"`` refuses a single device, which "auto" picks
        correctly either way. ``devices`` on a TPU is 1, every device or one index.

    Example
        Before::

            trainer = L.Trainer(
                accelerator="gpu",
                devices=torch.cuda.device_count(),
                precision="16-mixed",
                strategy="ddp",
            )

        After::

            trainer = L.Trainer(
                accelerator="tpu",
                devices="auto",
                precision="bf16-true",
                strategy="auto",
            )
    """

    CODE = "TPU141"
    NAME = "lightning-trainer"
    SUMMARY = "Lightning Trainer/Fabric: accelerator, devices, precision and strategy for the TPU"
    SAFETY = Safety.SEMANTIC
    NUMERICS = "16-bit precision becomes bfloat16 (bf16-true: weights and activations in bf16)"
    TRIGGERS = ("Trainer", "Fabric")
    FINDINGS = {
        FINDING: FindingDoc(
            "Lightning setting to check for a TPU",
            why="The Trainer (or Fabric) needs accelerator='tpu', devices 1 or 'auto', a "
            "precision among 32-true/16-true/bf16-true and an XLA strategy on a TPU; this "
            "setting could not be traced to a value, or has no TPU counterpart.",
            what_to_do="Set accelerator='tpu', devices='auto', precision='bf16-true' and "
            "strategy='auto' for the TPU run; DeepSpeed does not run on XLA, and FSDP on XLA "
            "is Lightning's XLAFSDPStrategy (strategy='xla_fsdp').",
        ),
    }
    CLASSES = (LIGHTNING_TRAINER, FABRIC)
    SETTINGS = (
        Setting(
            "accelerator",
            values={"gpu": "tpu", "cuda": "tpu"},
            unfollowed="accelerator must be 'tpu' (or 'auto') on a TPU",
        ),
        Setting(
            "devices",
            convert=_devices,
            calls={name: EVERY_DEVICE for name in CUDA_DEVICE_COUNTS},
            collections=EVERY_DEVICE,
            unfollowed="devices on a TPU are 1, 'auto' (all of them) or [index]",
        ),
        Setting(
            "precision",
            values={value: "bf16-true" for value in HALF_PRECISIONS},
            unfollowed="precision on XLA must be '32-true', '16-true' or 'bf16-true'",
        ),
        Setting(
            "strategy",
            values={name: "auto" for name in DDP_STRATEGIES},
            unsupported_prefixes=("deepspeed", "fsdp"),
            unsupported="DeepSpeed does not run on XLA; FSDP on XLA is strategy='xla_fsdp'",
        ),
        Setting(
            "gpus",
            always_reported=True,
            unfollowed="gpus= is gone since Lightning 2.0: accelerator='tpu', devices='auto'",
        ),
    )
    UNFOLLOWED = FINDING

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(*LIGHTNING_PACKAGES)

    VALID = [
        Valid(
            "import lightning as L\n\n"
            'trainer = L.Trainer(accelerator="tpu", devices="auto", precision="bf16-true")\n'
            "single = L.Trainer(accelerator=\"auto\", devices=1, max_epochs=3)\n",
            why="already set up for a TPU; one device and 'auto' stay",
        ),
        Valid(
            "from transformers import Trainer\n\n"
            'trainer = Trainer(model=model, args=args)\n',
            why="the HF Trainer is TPU142's",
        ),
    ]
    INVALID = [
        Invalid(
            "import lightning as L\nimport torch\n\n"
            "trainer = L.Trainer(\n"
            '    accelerator="gpu",\n'
            "    devices=torch.cuda.device_count(),\n"
            '    precision="16-mixed",\n'
            '    strategy="ddp",\n'
            "    max_epochs=10,\n"
            ")\n",
            "import lightning as L\nimport torch\n\n"
            "trainer = L.Trainer(\n"
            '    accelerator="tpu",\n'
            '    devices="auto",\n'
            '    precision="bf16-true",\n'
            '    strategy="auto",\n'
            "    max_epochs=10,\n"
            ")\n",
        ),
        Invalid(
            "import pytorch_lightning as pl\nimport torch\n\n"
            "trainer = pl.Trainer(accelerator='gpu' if torch.cuda.is_available() else 'cpu', "
            "devices=-1, precision=16)\n",
            "import pytorch_lightning as pl\nimport torch\n\n"
            "trainer = pl.Trainer(accelerator='tpu' if torch.cuda.is_available() else 'cpu', "
            "devices=\"auto\", precision=\"bf16-true\")\n",
            why="pytorch_lightning spelling; an availability choice keeps its CPU arm (TPU101 "
            "folds the test)",
        ),
        Invalid(
            "import argparse\nfrom lightning.fabric import Fabric\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--precision", default="bf16-mixed", choices=["32-true", '
            '"16-mixed", "bf16-mixed"])\n'
            'parser.add_argument("--devices", default="2")\n'
            "args = parser.parse_args()\n"
            'fabric = Fabric(accelerator="cuda", devices=args.devices, precision=args.precision)\n',
            "import argparse\nfrom lightning.fabric import Fabric\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--precision", default="bf16-true", choices=["32-true", '
            '"bf16-true"])\n'
            'parser.add_argument("--devices", default="auto")\n'
            "args = parser.parse_args()\n"
            'fabric = Fabric(accelerator="tpu", devices=args.devices, precision=args.precision)\n',
            why="Fabric takes the same settings; argparse defaults and choices follow",
        ),
        Invalid(
            "import lightning as L\n\n"
            "def build(cfg):\n"
            '    return L.Trainer(accelerator=cfg.accelerator, strategy="deepspeed_stage_2", '
            "gpus=2)\n",
            "import lightning as L\n\n"
            "def build(cfg):\n"
            "    # TODO(tpu-migrate): TPU215 accelerator must be 'tpu' (or 'auto') on a TPU\n"
            '    return L.Trainer(accelerator=cfg.accelerator, strategy="deepspeed_stage_2", '
            "gpus=2)\n",
            findings=("TPU215", "TPU215", "TPU215"),
            why="a config attribute, DeepSpeed and gpus= are reported, not guessed",
        ),
        Invalid(
            "import argparse\nimport lightning as L\n\n"
            "parser = argparse.ArgumentParser()\n"
            'parser.add_argument("--gpus", type=int, default=4)\n'
            "args = parser.parse_args()\n"
            'trainer = L.Trainer(accelerator="gpu", devices=args.gpus)\n',
            "import argparse\nimport lightning as L\n\n"
            "parser = argparse.ArgumentParser()\n"
            "# TODO(tpu-migrate): TPU215 devices on a TPU are 1, 'auto' (all of them) or "
            "[index] (this option's type= cannot take 'auto')\n"
            'parser.add_argument("--gpus", type=int, default=4)\n'
            "args = parser.parse_args()\n"
            'trainer = L.Trainer(accelerator="tpu", devices=args.gpus)\n',
            findings=("TPU215",),
            why="argparse would run a string default through type=int: reported instead",
        ),
    ]

