"""TPU140: Accelerate trains in bf16 on a TPU: ``Accelerator(mixed_precision="fp16")`` becomes bf16."""

from __future__ import annotations


from migrate.fastcst.facts import FileFacts
from ._base import FindingDoc, Invalid, Safety, Valid
from ._frameworks import ACCELERATOR, FrameworkClass
from ._settings import ConfiguresFramework, Setting

FINDING = "TPU214"
NOTEBOOK_LAUNCHER = FrameworkClass(ACCELERATOR.framework, ("accelerate",), ("notebook_launcher",))


class AcceleratePrecision(ConfiguresFramework):
    """
    What it does
        Makes an Accelerate script ask for the mixed precision a TPU has: ``mixed_precision=
        "fp16"`` of ``Accelerator(...)`` becomes ``"bf16"``, where the value is written: the
        literal, both arms of ``"fp16" if torch.cuda.is_available() else "no"`` (TPU101 then
        folds the test), a local variable's assignment, or the argparse option it is read from
        (``--mixed_precision``: its default, and ``"fp16"`` in its ``choices`` becomes
        ``"bf16"``). "no" and "bf16" are left as they are.

        Nothing else of the script changes here. The objects handed to
        ``accelerator.prepare(...)`` are Accelerate's: the loop rules give them no device move,
        ``xm.optimizer_step``, ``torch_xla.sync()``, ``MpDeviceLoader`` or ``drop_last`` (on XLA
        the prepared optimizer reduces the gradients and steps, and the prepared loaders are
        ``MpDeviceLoader``s that cut the graph). CUDA calls outside them are migrated as usual.

        Reported (TPU214): a ``mixed_precision`` whose value this rule cannot trace (a config
        entry, a parameter), and ``notebook_launcher(..., num_processes=N)``, which starts a TPU
        run only in Colab and Kaggle.

    Why
        Accelerate refuses fp16 on a TPU: ``Accelerator(mixed_precision="fp16")`` raises
        ``ValueError: fp16 mixed precision is not supported on 'xla'`` (accelerate 1.16, when
        torch_xla's device is a TPU). TPUs compute in bfloat16, which needs no loss scaling.
        Launch the migrated script on a TPU VM with ``accelerate launch --tpu script.py`` (it
        calls the script's ``main()`` in one process per TPU device; ``--main_training_function``
        names another function) or after ``accelerate config`` picked the TPU.

    Example
        Before::

            parser.add_argument("--mixed_precision", default="fp16", choices=["no", "fp16", "bf16"])
            accelerator = Accelerator(mixed_precision=args.mixed_precision)

        After::

            parser.add_argument("--mixed_precision", default="bf16", choices=["no", "bf16"])
            accelerator = Accelerator(mixed_precision=args.mixed_precision)
    """

    CODE = "TPU140"
    NAME = "accelerate-precision"
    SUMMARY = "Accelerate: mixed_precision fp16 becomes bf16, the TPU's type"
    SAFETY = Safety.SEMANTIC
    NUMERICS = "mixed precision computes in bfloat16 instead of float16"
    TRIGGERS = ("accelerate",)
    FINDINGS = {
        FINDING: FindingDoc(
            "Accelerate setting to check for a TPU",
            why="On a TPU Accelerate refuses mixed_precision='fp16' (ValueError), and "
            "notebook_launcher only starts TPU processes inside Colab or Kaggle: elsewhere its "
            "num_processes takes the multi-GPU path.",
            what_to_do="Make mixed_precision 'bf16' (or 'no') on the TPU. Launch scripts with "
            "`accelerate launch --tpu script.py` (or after `accelerate config` chose the TPU); "
            "it starts one process per TPU device by itself.",
        ),
    }
    CLASSES = (ACCELERATOR,)
    SETTINGS = (
        Setting(
            "mixed_precision",
            values={"fp16": "bf16"},
            unfollowed="mixed_precision must not be 'fp16' on a TPU (Accelerate raises): use 'bf16'",
        ),
    )
    UNFOLLOWED = FINDING

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses("accelerate")

    def plan_more(self) -> None:
        frameworks = self.index.frameworks
        for call in self.index.calls:
            if frameworks.is_class(call.func, NOTEBOOK_LAUNCHER) and any(
                arg.keyword is not None and arg.keyword.value == "num_processes"
                for arg in call.args
            ):
                self.flag(
                    call,
                    FINDING,
                    "notebook_launcher starts TPU processes only in Colab/Kaggle (all devices, "
                    "whatever num_processes says): elsewhere run `accelerate launch --tpu`",
                )

    VALID = [
        Valid(
            "from accelerate import Accelerator\n\n"
            'accelerator = Accelerator(mixed_precision="bf16")\n'
            'plain = Accelerator(mixed_precision="no", gradient_accumulation_steps=2)\n',
            why="already a TPU precision",
        ),
        Valid(
            "import torch\n\n"
            'scaler_mode = {"mixed_precision": "fp16"}\n'
            'print("fp16")\n',
            why="no Accelerator: the string means nothing here",
        ),
    ]
    INVALID = [
        Invalid(
            "from accelerate import Accelerator\n\n"
            'accelerator = Accelerator(mixed_precision="fp16", log_with="all")\n',
            "from accelerate import Accelerator\n\n"
            'accelerator = Accelerator(mixed_precision="bf16", log_with="all")\n',
        ),
        Invalid(
            "import accelerate\nimport torch\n\n"
            "accelerator = accelerate.Accelerator(\n"
            "    mixed_precision='fp16' if torch.cuda.is_available() else 'no'\n"
            ")\n",
            "import accelerate\nimport torch\n\n"
            "accelerator = accelerate.Accelerator(\n"
            "    mixed_precision='bf16' if torch.cuda.is_available() else 'no'\n"
            ")\n",
            why="both arms are mapped: TPU101 then folds the availability test",
        ),
        Invalid(
            "import argparse\nfrom accelerate import Accelerator\n\n"
            "def main():\n"
            "    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument(\n"
            '        "--mixed_precision",\n'
            "        type=str,\n"
            '        default="fp16",\n'
            '        choices=["no", "fp16", "bf16", "fp8"],\n'
            "    )\n"
            "    args = parser.parse_args()\n"
            "    accelerator = Accelerator(cpu=args.cpu, mixed_precision=args.mixed_precision)\n",
            "import argparse\nfrom accelerate import Accelerator\n\n"
            "def main():\n"
            "    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument(\n"
            '        "--mixed_precision",\n'
            "        type=str,\n"
            '        default="bf16",\n'
            '        choices=["no", "bf16", "fp8"],\n'
            "    )\n"
            "    args = parser.parse_args()\n"
            "    accelerator = Accelerator(cpu=args.cpu, mixed_precision=args.mixed_precision)\n",
            why="the argparse option's default and choices (accelerate's nlp_example.py)",
        ),
        Invalid(
            "from accelerate import Accelerator\n\n"
            "def train(fp16):\n"
            '    precision = "fp16" if fp16 else "no"\n'
            "    accelerator = Accelerator(mixed_precision=precision)\n",
            "from accelerate import Accelerator\n\n"
            "def train(fp16):\n"
            '    precision = "bf16" if fp16 else "no"\n'
            "    accelerator = Accelerator(mixed_precision=precision)\n",
            why="a local variable's assignment; the user's flag still decides",
        ),
        Invalid(
            "from accelerate import Accelerator, notebook_launcher\n\n"
            "def train(config):\n"
            '    accelerator = Accelerator(mixed_precision=config["precision"])\n\n'
            "notebook_launcher(train, (config,), num_processes=2)\n",
            "from accelerate import Accelerator, notebook_launcher\n\n"
            "def train(config):\n"
            "    # TODO(tpu-migrate): TPU214 mixed_precision must not be 'fp16' on a TPU "
            "(Accelerate raises): use 'bf16'\n"
            '    accelerator = Accelerator(mixed_precision=config["precision"])\n\n'
            "# TODO(tpu-migrate): TPU214 notebook_launcher starts TPU processes only in "
            "Colab/Kaggle (all devices, whatever num_processes says): elsewhere run `accelerate "
            "launch --tpu`\n"
            "notebook_launcher(train, (config,), num_processes=2)\n",
            findings=("TPU214", "TPU214"),
            why="a config entry cannot be traced; the launcher's process count is not a TPU's",
        ),
    ]
