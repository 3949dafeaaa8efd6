"""The notes of a report: what the instrumentation changed in each run, and hints for known failures."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from .runner import MIGRATED, ORIGINAL, SideRun, protocol

if TYPE_CHECKING:
    from .session import Options

# Known failure signatures -> what the idioms doc says about them.
FAILURE_HINTS = (
    (
        "device_ready_queues_",
        "pitfall P19: a backward ran on the CPU before the XLA device existed; call "
        "torch_xla.device() at start-up, before any backward (this fails on a TPU too)",
    ),
    (
        "Runtime is already initialized",
        "pitfall P15: the XLA device was used before torch_xla.launch / "
        "xmp.spawn; acquire it inside the launched function",
    ),
)
CUDA_FAILURES = (
    "No CUDA GPUs are available",
    "Found no NVIDIA driver",
    "Torch not compiled with CUDA enabled",
)


def failure_hints(run: SideRun, options: Options) -> list[str]:
    hints = [hint for marker, hint in FAILURE_HINTS if marker in run.stderr]
    if (
        run.spec.side == ORIGINAL
        and options.original_cpu_path
        and any(m in run.stderr for m in CUDA_FAILURES)
    ):
        hints.append(
            "the original needs CUDA: without --original-cpu-path its CUDA calls are mapped to the CPU"
        )
    return hints


def run_notes(options: Options, original: SideRun, migrated: SideRun) -> list[str]:
    counts = {run.spec.side: _counts(run) for run in (original, migrated)}
    notes = []
    dropout = counts[ORIGINAL]["dropout"], counts[MIGRATED]["dropout"]
    if options.keep_dropout and options.align_rng:
        masks = sum(n for k, n in counts[MIGRATED].items() if k in _DROPOUT_DRAWS)
        notes.append(
            "dropout kept (--keep-dropout): the migrated run drew its masks from the CPU generator "
            f"as the original's CPU dropout does ({masks} dropout call(s) on XLA)"
        )
        unaligned = counts[ORIGINAL]["dropout:unaligned"], counts[MIGRATED]["dropout:unaligned"]
        if any(unaligned):
            notes.append(
                "dropout inside attention and RNN kernels cannot be drawn on the CPU: off on both "
                f"sides ({unaligned[0]} call(s) in the original run, {unaligned[1]} in the migrated)"
            )
    elif options.keep_dropout:
        notes.append(
            "dropout kept with --no-align-rng: CPU and XLA draw different random masks, "
            "so the losses are not expected to match"
        )
    else:
        notes.append(
            f"dropout disabled on both sides (--keep-dropout keeps it): "
            f"{dropout[0]} dropout call(s) in the original run, {dropout[1]} in the migrated run"
        )
    autocast = counts[ORIGINAL]["autocast"], counts[MIGRATED]["autocast"]
    if options.keep_autocast:
        notes.append(
            f"autocast kept (--keep-autocast): compared with rtol {options.tolerance.rtol:g}"
        )
    else:
        notes.append(
            f"autocast disabled on both sides for an fp32 comparison: {autocast[0]} region(s) "
            f"in the original run, {autocast[1]} in the migrated run"
        )
    dropped = {
        k.removeprefix("drop_last:"): n
        for k, n in counts[ORIGINAL].items()
        if k.startswith("drop_last:")
    }
    if dropped:
        made = ", ".join(f"{name} x{n}" for name, n in sorted(dropped.items()))
        notes.append(f"drop_last=True given in the original run, as in the migrated one: {made}")
    if options.original_cpu_path:
        notes.append("original run untouched on the CPU (--original-cpu-path): no CUDA mapping")
    else:
        mapped = {
            k.removeprefix("cuda:"): n for k, n in counts[ORIGINAL].items() if k.startswith("cuda:")
        }
        if mapped:
            used = ", ".join(
                f"{name} x{n}" for name, n in sorted(mapped.items(), key=lambda kv: -kv[1])
            )
            notes.append(
                f"CUDA mapped to the CPU in the original run (its accelerator code path): {used}"
            )
        else:
            notes.append(
                "CUDA mapping was ready in the original run, but the script never used CUDA"
            )
    notes.extend(_framework_notes(counts[ORIGINAL], counts[MIGRATED]))
    notes.extend(_migrated_side_notes(options, counts[MIGRATED]))
    notes.append(
        f"seeded random, numpy and torch with {options.seed} before each run "
        f"(and the XLA RNG at the migrated run's first torch_xla.device())"
    )
    for run in (original, migrated):
        notes.extend(_process_notes(run, options.steps))
    return notes


_DROPOUT_DRAWS = {
    "rng:" + name
    for name in ("dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout")
}


def _listed(counts: Counter, prefix: str) -> str:
    """ "name xN, ..." for the counts under prefix, most used first."""
    found = {k.removeprefix(prefix): n for k, n in counts.items() if k.startswith(prefix)}
    return ", ".join(f"{name} x{n}" for name, n in sorted(found.items(), key=lambda kv: -kv[1]))


def _framework_notes(original: Counter, migrated: Counter) -> list[str]:
    """What frameworks.py held equal between a framework's GPU path and its XLA path."""
    notes = []
    if original["framework:accelerate"]:
        notes.append(
            "Accelerate (and the Hugging Face Trainer on it) takes its XLA path whenever torch_xla "
            "imports: the original run had USE_TORCH_XLA=0, so it took its GPU path (on the CPU), "
            "the migrated run its XLA path"
        )
    shuffled = original["framework:accelerate-xla-shuffle"]
    if shuffled:
        notes.append(
            "Accelerate seeds a shuffling DataLoader at prepare time on XLA, at iteration on "
            f"the GPU path: the original run seeded its {shuffled} shuffling loader(s) as on XLA, "
            "so both runs read the same batches"
        )
    one_device = original["framework:lightning-ddp-one-device"]
    if one_device:
        notes.append(
            f"Lightning's DDP strategy over the original run's one device ran as Lightning's "
            f"single-device strategy (x{one_device}), which the migrated strategy='auto' is on "
            "verify's one XLA device: over one device, DDP would re-seed at set-up and read "
            "through a DistributedSampler, so the runs would shuffle differently from step 1 "
            "(on a TPU VM with several devices, Lightning's XLAStrategy reads through the same "
            "DistributedSampler as DDP)"
        )
    if migrated["framework:lightning-xla-half"]:
        notes.append(
            "Lightning's bf16-true/16-true on XLA (XLA_USE_BF16/XLA_USE_F16: every float32 tensor "
            "on the device stored in half precision) switched off in the migrated run for the "
            "fp32 comparison, as autocast is (--keep-autocast keeps it)"
        )
    if migrated["framework:lightning-xla-half-kept"]:
        notes.append(
            "Lightning's bf16-true/16-true on XLA kept (--keep-autocast): the migrated run stored "
            "every float32 device tensor in half precision, the original ran autocast"
        )
    return notes


def _migrated_side_notes(options: Options, counts: Counter) -> list[str]:
    """What xla_standins.py, inline_loader.py and rng_align.py did in the migrated run."""
    notes = []
    standins = _listed(counts, "xla-standin:")
    if standins:
        notes.append(
            "TPU runtime APIs that XLA:CPU cannot run were given CPU stand-ins in the migrated "
            f"run: {standins}"
        )
    inline = counts.get("inline-loader:ParallelLoader", 0)
    if inline:
        notes.append(
            f"the migrated run's device loaders (pl.MpDeviceLoader/ParallelLoader x{inline}) read "
            "each batch in the training thread when it is asked for, as the original's DataLoader "
            "does, so the data's own random draws come in the original's order; on a TPU they "
            "read ahead in a background thread"
        )
    if not options.align_rng:
        notes.append(
            "random draws on the XLA device left to the XLA RNG (--no-align-rng): they differ "
            "from the original's, which come from the CPU generator"
        )
        return notes
    aligned = _listed(counts, "rng:")
    if aligned:
        notes.append(
            "random draws of the migrated run taken from the CPU generator, as in the original: "
            + aligned
        )
    unaligned = _listed(counts, "rng-unaligned:")
    if unaligned:
        notes.append(
            "random draws of the migrated run that could not be taken from the CPU generator "
            f"(they come from the XLA RNG, so they differ from the original's): {unaligned}"
        )
    return notes


def _counts(run: SideRun) -> Counter:
    total = Counter()
    for trace in run.traces:
        total.update(trace.get("notes") or {})
    return total


def _process_notes(run: SideRun, requested: int) -> list[str]:
    trace = run.trace
    if trace is None:
        return []
    notes = []
    if not trace.get("is_root"):
        notes.append(
            f"the {run.spec.side} run trained in a child process (pid {trace['pid']}, "
            f"rank {trace.get('rank')} from {trace.get('rank_source')}); "
            f"{len(run.traces)} process trace(s) recorded, rank 0 compared"
        )
    if trace.get("status") == protocol.FINISHED and len(trace["steps"]) < requested:
        notes.append(
            f"the {run.spec.side} script ended after {len(trace['steps'])} optimizer step(s), "
            f"fewer than the {requested} requested"
        )
    devices = trace.get("param_devices") or []
    if run.spec.side == MIGRATED and devices and "xla" not in devices:
        notes.append(
            f"the migrated run's optimizer updates parameters on {', '.join(devices)}, not on the XLA device: "
            "on XLA, module.to(device) replaces the Parameter objects, so an optimizer built before the "
            "move keeps the stale CPU copies (build it after moving the model)"
        )
    if any(step["loss"] is None for step in trace["steps"]):
        notes.append(
            f"the {run.spec.side} run had optimizer steps without a backward() before them"
        )
    return notes
