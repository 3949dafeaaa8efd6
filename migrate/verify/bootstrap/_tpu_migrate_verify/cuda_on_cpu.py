"""Original side only: run the script's CUDA code path on the CPU.

The migration translates the accelerator path (``if torch.cuda.is_available(): ...``), so that is the
path the original must take for a fair comparison: the script is told a GPU is there, and every
use of it lands on the CPU.

- A TorchFunctionMode rewrites CUDA device arguments of every torch call (``.to("cuda")``,
  ``device="cuda"`` factories, ``model.to(device)``) and makes ``.cuda()`` / ``.pin_memory()``
  no-ops. ``torch.device("cuda")`` itself stays a CUDA device object, so ``device.type == "cuda"``
  branches behave as on a GPU machine.
- The ``torch.cuda`` / ``torch.accelerator`` entry points a training script calls (availability,
  device count, synchronize, seeds, memory queries, events) are replaced by CPU stand-ins.
- DataLoaders do not pin memory; ``torch.load`` maps to the CPU; NCCL becomes Gloo and DDP drops
  ``device_ids``.

The mode is thread-local: work the script does in threads of its own is not mapped (and fails loudly).
Every mapping is counted, and the counts are reported.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections import Counter
from types import SimpleNamespace

import torch
from torch.overrides import TorchFunctionMode

CPU = torch.device("cpu")
DEVICE_NAME = "CPU (CUDA mapped by tpu-migrate verify)"


def install(notes: Counter) -> None:
    _patch_cuda(notes)
    _patch_accelerator(notes)
    _patch_data_loader(notes)
    _patch_load(notes)
    _patch_default_device(notes)
    _patch_distributed(notes)
    CudaOnCpu(notes).__enter__()  # stays active for the rest of the process (this thread)


def is_cuda(value) -> bool:
    if isinstance(value, str):
        return value == "cuda" or value.startswith("cuda:")
    return isinstance(value, torch.device) and value.type == "cuda"


def _is_index(value) -> bool:
    """A bare device index (``device=0``) means a CUDA device."""
    return isinstance(value, int) and not isinstance(value, bool)


def to_cpu(value):
    if isinstance(value, str):
        return "cpu" if is_cuda(value) else value
    return CPU if is_cuda(value) else value


class CudaOnCpu(TorchFunctionMode):
    _SELF = {torch.Tensor.cuda: "cuda:.cuda()", torch.Tensor.pin_memory: "cuda:pin_memory"}

    def __init__(self, notes: Counter) -> None:
        super().__init__()
        self.notes = notes

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.device:
            return func(*args, **kwargs)
        if func in self._SELF:
            self.notes[self._SELF[func]] += 1
            return args[0]
        if func is torch.Tensor.is_pinned:
            return False
        mapped = False
        if any(is_cuda(a) for a in args):
            args = tuple(to_cpu(a) for a in args)
            mapped = True
        elif func is torch.Tensor.to and len(args) > 1 and _is_index(args[1]):  # x.to(0) is cuda:0
            args = (args[0], CPU, *args[2:])
            mapped = True
        if any(is_cuda(v) for v in kwargs.values()) or _is_index(kwargs.get("device")):
            kwargs = {
                k: CPU if k == "device" and _is_index(v) else to_cpu(v) for k, v in kwargs.items()
            }
            mapped = True
        if mapped:
            self.notes["cuda:device"] += 1
        return func(*args, **kwargs)


def _counted(notes: Counter, key: str, function):
    @functools.wraps(function)
    def counted(*args, **kwargs):
        notes[key] += 1
        return function(*args, **kwargs)

    return counted


def _nothing(*args, **kwargs):
    return None


def _zero(*args, **kwargs):
    return 0


class _Event:
    """torch.cuda.Event for timing code: wall-clock times on the CPU."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False, **kwargs):
        self._time = None

    def record(self, stream=None):
        self._time = time.perf_counter()

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def query(self):
        return True

    def elapsed_time(self, end_event):
        return (end_event._time - self._time) * 1000.0


class _Stream:
    def __init__(self, *args, **kwargs):
        pass

    def synchronize(self):
        pass

    def wait_stream(self, stream):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        event = event or _Event()
        event.record()
        return event

    def query(self):
        return True


class _DeviceContext(contextlib.nullcontext):
    def __init__(self, device=None):
        super().__init__()


def _host_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 16 * 2**30


def _properties(device=None):
    return SimpleNamespace(
        name=DEVICE_NAME,
        major=8,
        minor=0,
        total_memory=_host_memory(),
        multi_processor_count=os.cpu_count() or 1,
        is_integrated=False,
    )


def _patch_cuda(notes: Counter) -> None:
    memory = _host_memory()
    replacements = {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": _nothing,
        "is_initialized": lambda: True,
        "init": _nothing,
        "synchronize": _nothing,
        "empty_cache": _nothing,
        "ipc_collect": _nothing,
        "reset_peak_memory_stats": _nothing,
        "reset_max_memory_allocated": _nothing,
        "reset_max_memory_cached": _nothing,
        "reset_accumulated_memory_stats": _nothing,
        "memory_allocated": _zero,
        "max_memory_allocated": _zero,
        "memory_reserved": _zero,
        "max_memory_reserved": _zero,
        "memory_cached": _zero,
        "max_memory_cached": _zero,
        "mem_get_info": lambda *a, **k: (memory, memory),
        "memory_stats": lambda *a, **k: {},
        "memory_summary": lambda *a, **k: "",
        "get_device_name": lambda *a, **k: DEVICE_NAME,
        "get_device_capability": lambda *a, **k: (8, 0),
        "get_device_properties": _properties,
        "is_bf16_supported": lambda *a, **k: True,
        "is_current_stream_capturing": lambda: False,  # optimizers ask before every step
        "manual_seed": _nothing,
        "manual_seed_all": _nothing,
        "seed": _nothing,
        "seed_all": _nothing,
        "initial_seed": lambda: torch.initial_seed(),
        # Device draws now come from the CPU generator, whose state torch saves on its own.
        "get_rng_state": lambda *a, **k: torch.get_rng_state(),
        "get_rng_state_all": lambda: [torch.get_rng_state()],
        "set_rng_state": _nothing,
        "set_rng_state_all": _nothing,
        "Event": _Event,
        "Stream": _Stream,
        "current_stream": lambda *a, **k: _Stream(),
        "default_stream": lambda *a, **k: _Stream(),
        "stream": lambda *a, **k: contextlib.nullcontext(),
        "device": _DeviceContext,
        "device_of": _DeviceContext,
    }
    submodules = [getattr(torch.cuda, name, None) for name in ("memory", "random", "graphs")]
    quiet = {"is_current_stream_capturing", "manual_seed_all"}  # torch itself calls these
    for name, replacement in replacements.items():
        if not isinstance(replacement, type) and name not in quiet:
            replacement = _counted(notes, f"cuda:torch.cuda.{name}", replacement)
        setattr(torch.cuda, name, replacement)
        for module in submodules:
            if module is not None and hasattr(module, name):
                setattr(module, name, replacement)


def _patch_accelerator(notes: Counter) -> None:
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is None:
        return
    replacements = {
        "is_available": lambda: True,
        "current_accelerator": lambda check_available=False: torch.device("cuda"),
        "device_count": lambda: 1,
        "current_device_index": lambda: 0,
        "current_device_idx": lambda: 0,
        "set_device_index": _nothing,
        "set_device_idx": _nothing,
        "synchronize": _nothing,
    }
    for name, replacement in replacements.items():
        if hasattr(accelerator, name):
            setattr(
                accelerator, name, _counted(notes, f"cuda:torch.accelerator.{name}", replacement)
            )
    memory = getattr(accelerator, "memory", None)
    for name in ("empty_cache", "reset_peak_memory_stats", "reset_accumulated_memory_stats"):
        if memory is not None and hasattr(memory, name):
            setattr(accelerator, name, _nothing)
            setattr(memory, name, _nothing)
    for name in (
        "memory_allocated",
        "max_memory_allocated",
        "memory_reserved",
        "max_memory_reserved",
    ):
        if memory is not None and hasattr(memory, name):
            setattr(accelerator, name, _zero)
            setattr(memory, name, _zero)


def _patch_data_loader(notes: Counter) -> None:
    from torch.utils.data import DataLoader

    original_init = DataLoader.__init__

    @functools.wraps(original_init)
    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        if self.pin_memory:
            notes["cuda:pin_memory"] += 1
            self.pin_memory = False

    DataLoader.__init__ = __init__


def _patch_load(notes: Counter) -> None:
    original_load = torch.load

    @functools.wraps(original_load)
    def load(f, map_location=None, *args, **kwargs):
        if map_location is None or is_cuda(map_location):
            map_location = "cpu"
        elif isinstance(map_location, dict):
            map_location = {k: to_cpu(v) for k, v in map_location.items()}
        return original_load(f, map_location, *args, **kwargs)

    torch.load = load


def _patch_default_device(notes: Counter) -> None:
    original = torch.set_default_device

    @functools.wraps(original)
    def set_default_device(device):
        if is_cuda(device):
            notes["cuda:device"] += 1
        return original(to_cpu(device))

    torch.set_default_device = set_default_device


def _patch_distributed(notes: Counter) -> None:
    import torch.distributed as dist

    if not dist.is_available():
        return
    from torch.distributed import distributed_c10d
    from torch.nn.parallel import DistributedDataParallel

    original_init_group = distributed_c10d.init_process_group

    @functools.wraps(original_init_group)
    def init_process_group(backend=None, *args, **kwargs):
        if backend is None or "nccl" in str(backend):
            notes["cuda:nccl->gloo"] += 1
            backend = "gloo"
        return original_init_group(backend, *args, **kwargs)

    distributed_c10d.init_process_group = init_process_group
    dist.init_process_group = init_process_group

    original_ddp_init = DistributedDataParallel.__init__

    @functools.wraps(original_ddp_init)
    def ddp_init(self, module, device_ids=None, output_device=None, *args, **kwargs):
        if device_ids is not None or output_device is not None:
            notes["cuda:ddp_device_ids"] += 1
        original_ddp_init(self, module, None, None, *args, **kwargs)

    DistributedDataParallel.__init__ = ddp_init
