"""The rule registry: every rule, in pipeline order.

Order matters. TPU120 (Hogwild) runs first: a file it reports stays on the CPU, and the engine runs
no later rule on it. Then old torch_xla spellings are modernised first, then the training
frameworks are configured for TPUs (TPU140-TPU142: they read ``torch.cuda`` counts and availability
tests in the frameworks' arguments before TPU104 and TPU101 rewrite them), then devices are chosen (and
models put on them before their optimizers are built), CUDA runtime calls mapped, batch shapes made
static (TPU113 drop_last, TPU114 bucket padding: they read the user's own ``DataLoader(...)`` and
``pad_sequence(...)`` calls, before TPU103 wraps the loaders in MpDeviceLoader), loaders wrapped
(TPU123 drops ``pin_memory``/``non_blocking`` first, so that a loader wrapped in a ``for`` header
reads as it will; TPU122 then drops the per-batch copies in the loops TPU103 wrapped: the three were
one rule, TPU103, and run where it ran), then the step boundary is placed (it needs to know whether
the loop iterates an MpDeviceLoader), and then the host reads are moved out of the step (TPU115
needs to know where the boundary is: a read before it is mid-step, and its step closures run at it).
Right before TPU115, TPU125 reports meter objects that keep device values (on the step as written)
and TPU124 puts per-step progress bars under an interval condition, so that TPU115 moves their reads
like any report at an interval: the three were one rule, TPU115, and run where it ran.

TPU107 (autocast) and TPU108 (the xla process group) run after the models are put on the device,
each with the rules split off from it where it ran. TPU137 removes the GradScaler after TPU107: an
autocast region in a branch the scaler's removal drops has then been rewritten, as when the two were
one rule. Of TPU108's parts TPU131 runs first: the rank reads it rewrites sit in arguments that
TPU108, TPU132 (DDP), TPU133 (the sampler) and TPU136 (launch) rebuild or drop, and a read dropped
unrewritten would keep its ``os`` import. TPU134 (``set_device``) and TPU135 (``DataParallel``)
remove statements before TPU136 puts the device at the top of each launched function, where it
takes the comment lines of the first statement left.

TPU110 seeds the XLA RNG only in files that use torch_xla, so it runs after every rule that can
make a file an XLA script (TPU102's ``xm.optimizer_step``, TPU103's loader, TPU115's closures);
before them, a file that only the step boundary makes XLA was seeded on the second run.

Devices are chosen by what was one rule, TPU101, and runs where it ran, in this order: TPU129 drops
``fused=True`` of optimizers; TPU128 collapses the branches on CUDA availability, so that a
``device`` bound in such a branch is bound where TPU127 looks for it; TPU127 moves tensors to the
device (before TPU101 makes ``torch.device("cuda")`` the XLA device: ``.to(torch.device("cuda"))``
is a move to ``device``); TPU101 makes the devices a script chooses the XLA device; TPU126 then
rewrites the configured device strings, past the ones TPU101 made devices. A flag such as
``use_cuda = torch.cuda.is_available()`` goes with whichever of them takes its last read.

TPU119 (a device for scripts that have none) runs right after TPU126: a script TPU101's parts found
no device code in gets ``device`` and its ``.to(device)`` moves, which the loader and step rules
then treat like any script's.

TPU118 (``inference_mode`` -> ``no_grad``) is a local rewrite too; it runs before the loop rules so
that they see the evaluation regions as ``torch.no_grad()``, the spelling they know.

TPU138 (``torch.load`` onto the CPU) runs right before TPU109 (``xm.save`` on every rank): new
strings take the quote of the file's first string as the user wrote it, which a guard TPU109 lifts
away may hold. The two were one rule, TPU109, and run where it ran.

TPU144 (sparse tensors made dense before they move) runs next to TPU111, after the device rules:
the moves it looks for are the ``.to(device)`` those rules wrote.

TPU116 (boolean-mask writes) is a local rewrite that depends on no other rule; it runs before
TPU117 so that only the writes it could not make static are reported. TPU121 (moving slices ->
``index_select``) runs just before TPU117 for the same reason (TPU257 reports the slices it could
not rewrite), and TPU143 (hazards inside a ``LightningModule``) after them. TPU145 (a factory in
``forward`` sized by a tensor gets that tensor's device) runs before them for the same reason:
TPU254 reports only the factories it could not give a device. TPU139 re-ties shared
weights right after the moves of the model as the migrated file makes them (``.cuda()`` turned into
``.to(device)`` by TPU101, the moves TPU106 and TPU119 add), so it runs after those rules, right
before TPU117: the two were one rule, TPU117, and run where it ran. TPU117 (XLA hazards) runs
last: it reports on the code as it will be written (after TPU115 moved the reads it can make
static) and its markers are not disturbed by later statement edits.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ._aliases import ALIASES, match, parts_of, split_from
from ._base import Finding, FindingDoc, ImportSpec, Invalid, Safety, TpuCodemod, Valid
from .tpu101_device_placement import DevicePlacement
from .tpu102_step_boundary import StepBoundary
from .tpu103_parallel_loader import ParallelLoader
from .tpu104_cuda_runtime import CudaRuntimeCalls
from .tpu105_modernize_torch_xla import ModernizeTorchXla
from .tpu106_model_before_optimizer import ModelBeforeOptimizer
from .tpu107_mixed_precision import MixedPrecision
from .tpu108_process_group import ProcessGroup
from .tpu109_checkpoints import Checkpoints
from .tpu110_xla_rng import XlaRng
from .tpu111_sparse_embeddings import SparseEmbeddings
from .tpu112_torch_compile import TorchCompile
from .tpu113_static_batch_shapes import StaticBatchShapes
from .tpu114_static_padding import StaticPadding
from .tpu115_host_syncs import HostSyncs
from .tpu116_masked_writes import MaskedWrites
from .tpu117_xla_hazards import XlaHazards
from .tpu118_inference_mode import InferenceMode
from .tpu119_adopt_device import AdoptDevice
from .tpu120_hogwild import Hogwild
from .tpu121_moving_slices import MovingSlices
from .tpu122_batch_copies import BatchCopies
from .tpu123_pin_memory import PinMemory
from .tpu124_progress_bars import ProgressBars
from .tpu125_meter_values import MeterValues
from .tpu126_device_strings import DeviceStrings
from .tpu127_device_moves import DeviceMoves
from .tpu128_availability_branches import AvailabilityBranches
from .tpu129_fused_optimizers import FusedOptimizers
from .tpu131_runtime_ranks import RuntimeRanks
from .tpu132_ddp_arguments import DdpArguments
from .tpu133_sampler_replicas import SamplerReplicas
from .tpu134_set_device import SetDevice
from .tpu135_data_parallel import DataParallel
from .tpu136_xla_launch import XlaLaunch
from .tpu137_grad_scaler import GradScalerRemoval
from .tpu140_accelerate_precision import AcceleratePrecision
from .tpu141_lightning_trainer import LightningTrainer
from .tpu142_hf_training_args import HfTrainingArguments
from .tpu143_lightning_module_hazards import LightningModuleHazards
from .tpu144_sparse_tensors import SparseTensors
from .tpu145_factory_devices import FactoryDevices
from .tpu138_checkpoint_loads import CheckpointLoads
from .tpu139_tied_weights import TiedWeights

PIPELINE: tuple[type[TpuCodemod], ...] = (
    Hogwild,
    ModernizeTorchXla,
    AcceleratePrecision,
    LightningTrainer,
    HfTrainingArguments,
    FusedOptimizers,
    AvailabilityBranches,
    DeviceMoves,
    DevicePlacement,
    DeviceStrings,
    AdoptDevice,
    ModelBeforeOptimizer,
    MixedPrecision,
    GradScalerRemoval,
    RuntimeRanks,
    ProcessGroup,
    DdpArguments,
    SamplerReplicas,
    SetDevice,
    DataParallel,
    XlaLaunch,
    CudaRuntimeCalls,
    CheckpointLoads,
    Checkpoints,
    SparseEmbeddings,
    SparseTensors,
    TorchCompile,
    InferenceMode,
    MaskedWrites,
    StaticBatchShapes,
    StaticPadding,
    PinMemory,
    ParallelLoader,
    BatchCopies,
    StepBoundary,
    MeterValues,
    ProgressBars,
    HostSyncs,
    XlaRng,
    FactoryDevices,
    MovingSlices,
    LightningModuleHazards,
    TiedWeights,
    XlaHazards,
)

__all__ = [
    "ALIASES",
    "PIPELINE",
    "Finding",
    "FindingDoc",
    "ImportSpec",
    "Invalid",
    "Safety",
    "TpuCodemod",
    "Valid",
    "all_codes",
    "code_selected",
    "options_by_rule",
    "parts_of",
    "rule_by_code",
    "select_rules",
    "split_from",
]


def all_codes() -> dict[str, type[TpuCodemod]]:
    """Every code (rule codes and the finding codes rules report) -> the rule that owns it."""
    codes: dict[str, type[TpuCodemod]] = {}
    for rule in PIPELINE:
        codes[rule.CODE] = rule
        for finding_code in rule.FINDINGS:
            codes[finding_code] = rule
    return codes


def rule_by_code(code: str) -> type[TpuCodemod]:
    try:
        return all_codes()[code.upper()]
    except KeyError:
        raise KeyError(f"unknown rule code {code!r}; `tpu-migrate rules` lists them") from None


def code_selected(code: str, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> bool:
    """ruff-style selection: prefixes allowed; the most specific match wins, ignore on ties.

    The code of a rule that was split stands for all of its parts (``codemods/_aliases.py``):
    it names each part as specifically as the part's own code, but a selector that names the
    part by its own code (or a prefix of it of the same length) wins over the alias.
    """
    nothing = (-1, 0)
    select_match = max(
        (found for p in select if (found := match(p, code)) is not None),
        default=nothing if select else (0, 0),
    )
    ignore_match = max(
        (found for p in ignore if (found := match(p, code)) is not None), default=nothing
    )
    return select_match > nothing and select_match > ignore_match


def options_by_rule(
    options: Mapping[str, Mapping[str, object]] | None,
) -> dict[str, dict[str, object]]:
    """``[tool.tpu-migrate.options.CODE]`` tables -> {rule code: {option: value}}.

    A table of an old code that was split goes to each of its parts (itself included) that has
    the option; a table of a rule's own code wins over the alias's. Options no rule of the code
    has are dropped here (the configuration reports them)."""
    rules = {rule.CODE: rule for rule in PIPELINE}
    by_rule: dict[str, dict[str, object]] = {}
    own: dict[str, dict[str, object]] = {}
    for code, values in (options or {}).items():
        code = code.upper()
        for part in parts_of(code):
            rule = rules.get(part)
            if rule is None:
                continue
            known = {name: value for name, value in values.items() if name in rule.OPTIONS}
            if known:
                (own if part == code else by_rule).setdefault(part, {}).update(known)
    for code, values in own.items():
        by_rule.setdefault(code, {}).update(values)
    return by_rule


def select_rules(select: Sequence[str] = (), ignore: Sequence[str] = ()) -> list[type[TpuCodemod]]:
    """Rules to run, in pipeline order, chosen by their own code.

    Finding codes (TPU2xx) are filtered separately: ignoring one silences it, and selecting one
    alone runs the rule that reports it.
    """
    for prefix in [*select, *ignore]:
        if not any(code.startswith(prefix.upper()) for code in all_codes()):
            raise KeyError(
                f"unknown rule code or prefix {prefix!r}; `tpu-migrate rules` lists them"
            )
    return [
        rule
        for rule in PIPELINE
        if code_selected(rule.CODE, select, ignore)
        or any(code in [s.upper() for s in select] for code in rule.FINDINGS)
    ]
