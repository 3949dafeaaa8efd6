"""TPU142: the HF Trainer's ``TrainingArguments`` ask for bf16 and an optimizer XLA runs."""

from __future__ import annotations

import libcst as cst

from migrate.fastcst.facts import FileFacts
from ._base import FindingDoc, Invalid, Safety, Valid
from ._frameworks import HF_PACKAGES, HF_TRAINER, FrameworkClass
from ._settings import ConfiguresFramework, Setting

FINDING = "TPU216"
TRAINING_ARGUMENTS = FrameworkClass(
    HF_TRAINER, ("transformers",), ("TrainingArguments", "Seq2SeqTrainingArguments")
)
TRL_CONFIGS = FrameworkClass(HF_TRAINER, ("trl",), (), suffix="Config")  # SFTConfig, DPOConfig...
ARGUMENT_PARSER = FrameworkClass(HF_TRAINER, ("transformers",), ("HfArgumentParser",))
# On the accelerator path the migration takes, these are True.
AVAILABILITY_TESTS = {"torch.cuda.is_available": True, "torch.accelerator.is_available": True}
XLA_OPTIMIZER = "adamw_torch"
# Optimizers built on CUDA-only kernels (bitsandbytes, torchao, apex, Ascend) -> what runs on XLA.
FUSED_OPTIMIZERS = {"adamw_torch_fused": XLA_OPTIMIZER, "adamw_apex_fused": XLA_OPTIMIZER}
CUDA_ONLY_OPTIMIZERS = (
    "adamw_bnb",
    "adamw_8bit",
    "ademamix_8bit",
    "lion_8bit",
    "lion_32bit",
    "paged_",
    "rmsprop_bnb",
    "galore_adamw_8bit",
    "adamw_torch_4bit",
    "adamw_torch_8bit",
    "adamw_torch_npu",
)
DROP_LAST = "dataloader_drop_last"


class HfTrainingArguments(ConfiguresFramework):
    """
    What it does
        Sets up the Hugging Face ``Trainer`` for a TPU through its ``TrainingArguments`` (and
        ``Seq2SeqTrainingArguments``, trl's ``SFTConfig`` and the like), where each value is
        written (a literal, both arms of ``a if c else b``, a local variable, an argparse
        option's default):

        - ``fp16=`` becomes ``bf16=`` and ``fp16_full_eval=`` ``bf16_full_eval=``, with
          ``torch.cuda.is_available()`` as their value read as True (the TPU is the
          accelerator now);
        - ``tf32=True`` goes, and so do ``half_precision_backend=``, ``fp16_backend=`` and
          ``fp16_opt_level=`` (apex and CUDA AMP settings);
        - ``optim="adamw_torch_fused"`` (and apex's fused AdamW) becomes ``"adamw_torch"``, and
          arguments that give no ``optim`` get ``optim="adamw_torch"``.

        The Trainer owns the loop, the loaders, the device and the optimizer step: the model
        handed to ``Trainer(model=...)`` gets no device move and the methods of a ``Trainer``
        subclass no loop rewrite (a CUDA device there becomes ``self.args.device``).

        Reported (TPU216): arguments without ``dataloader_drop_last`` (the last partial batch
        compiles a graph of its own), optimizers built on CUDA-only kernels (bitsandbytes,
        torchao), values this rule cannot trace, and an ``HfArgumentParser`` reading
        ``TrainingArguments`` from the command line (``--fp16`` must become ``--bf16`` there).

    Why
        On a TPU Accelerate, under the Trainer, refuses fp16 ("fp16 mixed precision is not
        supported on 'xla'"); bf16 is the TPU's type and needs no loss scaling. ``tf32=True``
        raises without an Ampere GPU. transformers' default optimizer since torch 2.8 is the
        fused AdamW, and fused optimizers refuse XLA parameters ("`fused=True` requires all the
        params to be floating point Tensors of supported devices", measured with transformers
        5.25 on XLA:CPU); the plain AdamW computes the same update.

    Example
        Before::

            args = TrainingArguments(output_dir="out", fp16=torch.cuda.is_available(), tf32=True)

        After::

            args = TrainingArguments(output_dir="out", bf16=True, optim="adamw_torch")
    """

    CODE = "TPU142"
    NAME = "hf-training-arguments"
    SUMMARY = "HF Trainer: TrainingArguments ask for bf16 and a non-fused AdamW, CUDA settings go"
    SAFETY = Safety.SEMANTIC
    NUMERICS = "fp16 mixed precision computes in bfloat16; the fused AdamW becomes the plain one"
    TRIGGERS = ("TrainingArguments", "HfArgumentParser", "Config")
    FINDINGS = {
        FINDING: FindingDoc(
            "HF Trainer setting to check for a TPU",
            why="The Trainer's last partial batch (train and eval) compiles a graph of its own "
            "on a TPU; bitsandbytes and torchao optimizers have CUDA-only kernels; fp16 and "
            "fused optimizers fail on XLA.",
            what_to_do="Pass dataloader_drop_last=True when the run may skip the last partial "
            "batch (evaluation then skips those samples too); use optim='adamw_torch' (or "
            "'adafactor'); on the command line use --bf16 instead of --fp16.",
        ),
    }
    CLASSES = (TRAINING_ARGUMENTS, TRL_CONFIGS)
    SETTINGS = (
        Setting("fp16", rename="bf16", calls=AVAILABILITY_TESTS),
        Setting("fp16_full_eval", rename="bf16_full_eval", calls=AVAILABILITY_TESTS),
        Setting("tf32", drop=(True,)),
        Setting("half_precision_backend", drop_always=True),
        Setting("fp16_backend", drop_always=True),
        Setting("fp16_opt_level", drop_always=True),
        Setting(
            "optim",
            values=FUSED_OPTIMIZERS,
            default=XLA_OPTIMIZER,
            unsupported_prefixes=CUDA_ONLY_OPTIMIZERS,
            unsupported="this optimizer's kernels are CUDA-only: use optim='adamw_torch' on a TPU",
        ),
    )
    UNFOLLOWED = FINDING

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(*HF_PACKAGES)

    def plan_more(self) -> None:
        frameworks = self.index.frameworks
        for call in self.index.calls:
            arguments = any(frameworks.is_class(call.func, kind) for kind in self.CLASSES)
            keywords = {arg.keyword.value for arg in call.args if arg.keyword is not None}
            unpacked = any(arg.star == "**" for arg in call.args)
            if arguments and DROP_LAST not in keywords and not unpacked:
                self.flag(
                    call,
                    FINDING,
                    "the last partial batch compiles a graph of its own: dataloader_drop_last="
                    "True drops it (in evaluation too)",
                )
            elif frameworks.is_class(call.func, ARGUMENT_PARSER) and _names_training_arguments(
                self, call
            ):
                self.flag(
                    call,
                    FINDING,
                    "TrainingArguments come from the command line: on a TPU pass --bf16 (not "
                    "--fp16) and --optim adamw_torch",
                )

    VALID = [
        Valid(
            "from transformers import TrainingArguments\n\n"
            'args = TrainingArguments(output_dir="out", bf16=True, optim="adamw_torch", '
            "dataloader_drop_last=True)\n",
            why="already set up for a TPU",
        ),
        Valid(
            "from transformers import BertConfig\n\n"
            "config = BertConfig(hidden_size=32, fp16=True)\n",
            why="a model config is no TrainingArguments",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom transformers import TrainingArguments\n\n"
            "args = TrainingArguments(\n"
            '    output_dir="out",\n'
            "    fp16=torch.cuda.is_available(),\n"
            "    tf32=True,\n"
            '    half_precision_backend="cuda_amp",\n'
            "    dataloader_drop_last=True,\n"
            ")\n",
            "import torch\nfrom transformers import TrainingArguments\n\n"
            "args = TrainingArguments(\n"
            '    output_dir="out",\n'
            "    bf16=True,\n"
            "    dataloader_drop_last=True,\n"
            '    optim="adamw_torch",\n'
            ")\n",
        ),
        Invalid(
            "import transformers\n\n"
            "def make_args(out, use_fp16):\n"
            "    return transformers.Seq2SeqTrainingArguments(\n"
            '        out, fp16=use_fp16, fp16_full_eval=True, optim="adamw_torch_fused"\n'
            "    )\n",
            "import transformers\n\n"
            "def make_args(out, use_fp16):\n"
            "    # TODO(tpu-migrate): TPU216 the last partial batch compiles a graph of its own: "
            "dataloader_drop_last=True drops it (in evaluation too)\n"
            "    return transformers.Seq2SeqTrainingArguments(\n"
            '        out, bf16=use_fp16, bf16_full_eval=True, optim="adamw_torch"\n'
            "    )\n",
            findings=("TPU216",),
            why="a flag of the user keeps deciding; the fused optimizer becomes the plain one",
        ),
        Invalid(
            "from transformers import HfArgumentParser, TrainingArguments\n\n"
            "parser = HfArgumentParser((ModelArguments, TrainingArguments))\n"
            "model_args, training_args = parser.parse_args_into_dataclasses()\n",
            "from transformers import HfArgumentParser, TrainingArguments\n\n"
            "# TODO(tpu-migrate): TPU216 TrainingArguments come from the command line: on a TPU "
            "pass --bf16 (not --fp16) and --optim adamw_torch\n"
            "parser = HfArgumentParser((ModelArguments, TrainingArguments))\n"
            "model_args, training_args = parser.parse_args_into_dataclasses()\n",
            findings=("TPU216",),
        ),
        Invalid(
            "from trl import SFTConfig\n\n"
            'config = SFTConfig(output_dir="out", optim="paged_adamw_8bit", '
            "dataloader_drop_last=True)\n",
            "from trl import SFTConfig\n\n"
            "# TODO(tpu-migrate): TPU216 this optimizer's kernels are CUDA-only: use "
            "optim='adamw_torch' on a TPU\n"
            'config = SFTConfig(output_dir="out", optim="paged_adamw_8bit", '
            "dataloader_drop_last=True)\n",
            findings=("TPU216",),
        ),
    ]


def _names_training_arguments(rule: HfTrainingArguments, call: cst.Call) -> bool:
    """``HfArgumentParser((ModelArguments, TrainingArguments))`` parses TrainingArguments."""
    frameworks = rule.index.frameworks
    for node in _names_in(call):
        if any(frameworks.is_class(node, kind) for kind in rule.CLASSES):
            return True
    return False


def _names_in(node: cst.CSTNode):
    if isinstance(node, (cst.Name, cst.Attribute)):
        yield node
        return
    for child in node.children:
        yield from _names_in(child)
