"""Original side only: run the script's CUDA code path on the CPU.

The migration translates the accelerator path (``if torch.cuda.is_available(): ...``), so that is
the path the original must take for a fair comparison: the script is told one GPU is there, and
every use of it lands on the CPU. What is mapped:

- Devices. A TorchFunctionMode rewrites the CUDA device arguments of every torch call:
  ``"cuda"``, ``"cuda:N"``, ``torch.device("cuda", N)``, a bare index (``x.to(0)``, ``device=0``,
  ``device=f"cuda:{rank}"``) in ``.to()``, factories and ``module.to()``; ``.cuda()`` in all its
  forms (``.cuda(0)``, ``.cuda(device=0)``, ``.cuda(non_blocking=True)``, ``module.cuda(gpu)``)
  returns the tensor as it is. ``torch.device("cuda")`` itself stays a CUDA device object, so
  ``device.type == "cuda"`` branches behave as on a GPU machine. ``torch.Generator(device="cuda")``
  makes a CPU generator; ``torch.load`` maps to the CPU; ``torch.set_default_device("cuda")`` and
  ``torch.set_default_tensor_type(torch.cuda.FloatTensor)`` pick the CPU.
- Legacy tensor types. ``torch.cuda.FloatTensor``, ``torch.cuda.LongTensor``, ... build CPU tensors
  of their dtype, ``isinstance(t, torch.cuda.FloatTensor)`` checks the dtype, and
  ``t.type(torch.cuda.LongTensor)`` / ``t.type("torch.cuda.LongTensor")`` convert on the CPU.
- Pinned memory. DataLoaders do not pin, ``pin_memory=True`` given to factories is dropped,
  ``t.pin_memory()`` is a plain copy and ``t.is_pinned()`` is False; ``non_blocking`` copies are
  ordinary CPU copies.
- The device runtime. ``torch.cuda`` / ``torch.accelerator`` entry points (availability, one
  device, ``set_device`` / ``current_device`` / ``torch.cuda.device(n)``, synchronize, seeds, memory
  queries, device properties) are CPU stand-ins. Streams (``torch.cuda.Stream``,
  ``torch.cuda.stream(s)``, ``current_stream().wait_stream(s)``, ``t.record_stream(s)``) keep track
  of the current stream and otherwise do nothing, as on a single in-order queue; events
  (``torch.cuda.Event(enable_timing=True)``) time with the wall clock.
- Multi-GPU wrappers. ``nn.DataParallel`` (any ``device_ids``) and ``nn.parallel.data_parallel``
  do what they do on a machine without GPUs: call the module directly (``model.module`` and the
  ``module.`` state_dict prefix stay; ``model.device_ids`` is empty). NCCL becomes Gloo (also
  in ``backend="cuda:nccl,..."``), ``init_process_group(device_id=...)`` and
  ``barrier(device_ids=...)`` drop the device, DDP drops ``device_ids`` / ``output_device``, and
  SyncBatchNorm (which refuses CPU inputs) computes plain batch norm when there is one process.
- Mixed precision needs nothing here: ``torch.cuda.amp.GradScaler()`` and
  ``torch.amp.GradScaler("cuda")`` work on CPU tensors once CUDA reports itself available and step
  the optimizer (neutralize.py controls autocast; the recorder records the unscaled loss), and the
  cuDNN flags are plain settings.

The mode is thread-local: work the script does in threads of its own is not mapped (it fails
loudly). It intercepts every torch call, so its common path (no device argument) is kept to a
dictionary look-up and a scan of the positional arguments' types. Every mapping is counted, and
the counts are reported.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import sys
import time
from collections import Counter
from types import SimpleNamespace

import torch
from torch.overrides import TorchFunctionMode

CPU = torch.device("cpu")
DEVICE_NAME = "CPU (CUDA mapped by tpu-migrate verify)"
_DEVICE_LIKE = frozenset({str, torch.device})  # the types a device argument can have, besides int
_LEGACY_TYPES = (
    "DoubleTensor",
    "FloatTensor",
    "HalfTensor",
    "BFloat16Tensor",
    "LongTensor",
    "IntTensor",
    "ShortTensor",
    "CharTensor",
    "ByteTensor",
    "BoolTensor",
)


class _State:
    """What the script selected: the current device index and the current stream."""

    def __init__(self) -> None:
        self.device = 0
        self.streams: list = []  # the current stream is the last one; empty: the default stream


STATE = _State()


def install(notes: Counter) -> None:
    _patch_cuda(notes)
    _patch_accelerator(notes)
    _patch_legacy_types(notes)
    _patch_generator(notes)
    _patch_data_loader(notes)
    _patch_load(notes)
    _patch_default_device(notes)
    _patch_data_parallel(notes)
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


def _map_kwargs(kwargs: dict, notes: Counter) -> dict | None:
    """kwargs with CUDA devices on the CPU and no pinning (counted); None if nothing changed."""
    mapped = None
    for key, value in kwargs.items():
        if value.__class__ in _DEVICE_LIKE:
            if not is_cuda(value):
                continue
            value = to_cpu(value)
            notes["cuda:device"] += 1
        elif key == "device" and _is_index(value):
            value = CPU
            notes["cuda:device"] += 1
        elif key == "pin_memory" and value:
            value = False
            notes["cuda:pin_memory"] += 1
        else:
            continue
        if mapped is None:
            mapped = dict(kwargs)
        mapped[key] = value
    return mapped


def _legacy_cpu_type(value):
    """torch.cuda.FloatTensor (ours) or "torch.cuda.FloatTensor" -> the CPU type; else unchanged."""
    if isinstance(value, _LegacyTensorType):
        return value.cpu_type
    if isinstance(value, str) and value.startswith("torch.cuda."):
        return "torch." + value[len("torch.cuda.") :]
    return value


class CudaOnCpu(TorchFunctionMode):
    def __init__(self, notes: Counter) -> None:
        super().__init__()
        self.notes = notes
        tensor = torch.Tensor
        self._special = {
            torch.device: self._device,
            tensor.cuda: self._cuda,
            tensor.to: self._to,
            tensor.pin_memory: self._pin_memory,
            tensor.is_pinned: self._is_pinned,
            tensor.type: self._type,
        }

    def __torch_function__(self, func, types, args=(), kwargs=None):
        try:
            special = self._special.get(func)
        except TypeError:  # an unhashable callable handed to handle_torch_function
            special = None
        if special is not None:
            return special(func, args, kwargs or {})
        for arg in args:
            if arg.__class__ in _DEVICE_LIKE and is_cuda(arg):
                return self._mapped(func, args, kwargs or {})
        if kwargs:
            return self._mapped(func, args, kwargs)
        return func(*args)

    def _mapped(self, func, args, kwargs):
        """The call with its CUDA device arguments on the CPU (and no pinning); each one counted."""
        for arg in args:
            if arg.__class__ in _DEVICE_LIKE and is_cuda(arg):
                args = tuple(to_cpu(a) for a in args)
                self.notes["cuda:device"] += 1
                break
        if kwargs:
            kwargs = _map_kwargs(kwargs, self.notes) or kwargs
        return func(*args, **kwargs)

    @staticmethod
    def _device(func, args, kwargs):
        return func(*args, **kwargs)

    def _cuda(self, func, args, kwargs):
        self.notes["cuda:.cuda()"] += 1
        memory_format = kwargs.get("memory_format", torch.preserve_format)
        if memory_format is not torch.preserve_format:
            return args[0].contiguous(memory_format=memory_format)
        return args[0]

    def _to(self, func, args, kwargs):
        if len(args) > 1 and _is_index(args[1]):  # x.to(0) is x.to("cuda:0")
            self.notes["cuda:device"] += 1
            args = (args[0], CPU, *args[2:])
        return self._mapped(func, args, kwargs)

    def _pin_memory(self, func, args, kwargs):
        self.notes["cuda:pin_memory"] += 1
        return args[0].clone()  # pinning copies: the result does not share memory with the input

    @staticmethod
    def _is_pinned(func, args, kwargs):
        return False

    def _type(self, func, args, kwargs):
        if len(args) > 1:
            args = (args[0], _legacy_cpu_type(args[1]), *args[2:])
        elif "dtype" in kwargs:
            kwargs = {**kwargs, "dtype": _legacy_cpu_type(kwargs["dtype"])}
        return self._mapped(func, args, kwargs)


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


def _device_index(device=None) -> int:
    """The CUDA device index the script means by ``device`` (None: the current one)."""
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        return STATE.device if device.index is None else device.index
    if _is_index(device):
        return device
    return STATE.device


def _set_device(device) -> None:
    if device is not None and not (_is_index(device) and device < 0):
        STATE.device = _device_index(device)


def _current_device() -> int:
    return STATE.device


class _DeviceContext:
    """``with torch.cuda.device(n):`` selects device n inside the block."""

    def __init__(self, device=None):
        self.index = None if device is None else _device_index(device)
        self.previous = None

    def __enter__(self):
        self.previous = STATE.device
        if self.index is not None and self.index >= 0:
            STATE.device = self.index
        return self

    def __exit__(self, *exc):
        STATE.device = self.previous
        return False


class _Event:
    """torch.cuda.Event for timing code: wall-clock times on the CPU."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False, **kwargs):
        self.enable_timing = enable_timing
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
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0


_STREAM_IDS = itertools.count(1)


class _Stream:
    """A CUDA stream: work is done in call order on the CPU, so waiting and syncing do nothing."""

    device_type = 1  # what torch.cuda.Stream reports for CUDA

    def __init__(self, device=None, priority=0, **kwargs):
        self.device_index = _device_index(device)
        self.priority = priority
        self.stream_id = next(_STREAM_IDS)
        self.cuda_stream = 0

    @property
    def device(self) -> torch.device:
        return torch.device("cuda", self.device_index)

    def synchronize(self):
        pass

    def wait_stream(self, stream):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        event = event or _Event()
        event.record(self)
        return event

    def query(self):
        return True

    def __enter__(self):
        STATE.streams.append(self)
        return self

    def __exit__(self, *exc):
        STATE.streams.pop()
        return False

    def __repr__(self):
        return f"<torch.cuda.Stream device={self.device} (on the CPU, tpu-migrate verify)>"


_DEFAULT_STREAM = _Stream()
_DEFAULT_STREAM.stream_id = 0


def _current_stream(device=None) -> _Stream:
    return STATE.streams[-1] if STATE.streams else _DEFAULT_STREAM


def _default_stream(device=None) -> _Stream:
    return _DEFAULT_STREAM


def _set_stream(stream) -> None:
    if stream is None:
        return
    if STATE.streams:
        STATE.streams[-1] = stream
    else:
        STATE.streams.append(stream)


class _StreamContext:
    """``with torch.cuda.stream(s):`` makes s the current stream in the block (None: no change)."""

    def __init__(self, stream=None):
        self.stream = stream

    def __enter__(self):
        if self.stream is not None:
            STATE.streams.append(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            STATE.streams.pop()
        return False


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
        "current_device": _current_device,
        "set_device": _set_device,
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
        "ExternalStream": _Stream,
        "StreamContext": _StreamContext,
        "current_stream": _current_stream,
        "default_stream": _default_stream,
        "set_stream": _set_stream,
        "stream": _StreamContext,
        "device": _DeviceContext,
        "device_of": lambda *a, **k: contextlib.nullcontext(),  # of a tensor, now on the CPU
    }
    submodules = [
        getattr(torch.cuda, name, None) for name in ("memory", "random", "graphs", "streams")
    ]

    def record_stream(tensor, stream):  # the argument parser would refuse our stream objects
        notes["cuda:record_stream"] += 1

    torch.Tensor.record_stream = record_stream
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
        "current_device_index": _current_device,
        "current_device_idx": _current_device,
        "set_device_index": _set_device,
        "set_device_idx": _set_device,
        "synchronize": _nothing,
        "current_stream": _current_stream,
        "set_stream": _set_stream,
        "device_index": _DeviceContext,
    }
    for name, replacement in replacements.items():
        if hasattr(accelerator, name):
            if not isinstance(replacement, type):
                replacement = _counted(notes, f"cuda:torch.accelerator.{name}", replacement)
            setattr(accelerator, name, replacement)
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
    if memory is not None and hasattr(memory, "memory_stats"):
        accelerator.memory_stats = memory.memory_stats = lambda *a, **k: {}


class _LegacyTensorType(type):
    """The class of our torch.cuda.FloatTensor & co.: instances are CPU tensors of the dtype."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, torch.Tensor) and obj.dtype == cls.dtype and not obj.is_sparse

    def __repr__(cls):
        return f"<class 'torch.cuda.{cls.__name__}'>"


def _patch_legacy_types(notes: Counter) -> None:
    for name in _LEGACY_TYPES:
        cpu_type = getattr(torch, name, None)
        if cpu_type is None or not hasattr(torch.cuda, name):
            continue

        def __new__(cls, *args, **kwargs):
            notes[f"cuda:torch.cuda.{cls.__name__}"] += 1
            kwargs.pop("device", None)
            return cls.cpu_type(*args, **kwargs)

        namespace = {
            "__new__": __new__,
            "__module__": "torch.cuda",
            "cpu_type": cpu_type,
            "dtype": cpu_type.dtype,
            "is_cuda": True,
            "is_sparse": False,
        }
        setattr(torch.cuda, name, _LegacyTensorType(name, (), namespace))

    original = torch.set_default_tensor_type

    @functools.wraps(original)
    def set_default_tensor_type(t):
        cpu = _legacy_cpu_type(t)
        if cpu is not t:
            notes["cuda:set_default_tensor_type"] += 1
        return original(cpu)

    torch.set_default_tensor_type = set_default_tensor_type


def _patch_generator(notes: Counter) -> None:
    real = torch.Generator

    class _GeneratorType(type(real)):
        def __instancecheck__(cls, obj):
            return isinstance(obj, real)

        def __subclasscheck__(cls, subclass):
            return issubclass(subclass, real)

    class Generator(real, metaclass=_GeneratorType):
        """torch.Generator(device="cuda") is a CPU generator (real generators pass isinstance)."""

        def __new__(cls, device="cpu"):
            if is_cuda(device) or _is_index(device):
                notes["cuda:device"] += 1
                device = CPU
            return real(device)

    Generator.__module__, Generator.__qualname__ = "torch", "Generator"
    torch.Generator = Generator


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
        if is_cuda(device) or _is_index(device):
            notes["cuda:device"] += 1
            device = CPU
        return original(device)

    torch.set_default_device = set_default_device


def _patch_data_parallel(notes: Counter) -> None:
    """DataParallel as torch runs it without GPUs: the wrapper calls its module."""
    from torch.nn.parallel import DataParallel

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        notes["cuda:DataParallel"] += 1
        super(DataParallel, self).__init__()
        self.module = module
        self.device_ids = []  # DataParallel.forward: no devices -> self.module(*inputs, **kwargs)
        self.dim = dim

    __init__.__doc__ = DataParallel.__init__.__doc__
    DataParallel.__init__ = __init__

    def data_parallel(
        module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None
    ):
        notes["cuda:data_parallel"] += 1
        if not isinstance(inputs, tuple):
            inputs = (inputs,) if inputs is not None else ()
        return module(*inputs, **(module_kwargs or {}))

    parallel = sys.modules["torch.nn.parallel"]
    parallel.data_parallel = data_parallel
    # torch.nn.parallel.data_parallel is the function; the module of the same name holds it too
    module = sys.modules.get("torch.nn.parallel.data_parallel")
    if module is not None:
        module.data_parallel = data_parallel


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
        if kwargs.get("device_id") is not None:
            notes["cuda:init_process_group(device_id)"] += 1
            kwargs["device_id"] = None
        return original_init_group(backend, *args, **kwargs)

    distributed_c10d.init_process_group = init_process_group
    dist.init_process_group = init_process_group

    original_barrier = distributed_c10d.barrier

    @functools.wraps(original_barrier)
    def barrier(*args, **kwargs):
        if kwargs.get("device_ids") is not None:
            notes["cuda:barrier(device_ids)"] += 1
            kwargs["device_ids"] = None
        if len(args) > 2 and args[2] is not None:
            args = (*args[:2], None, *args[3:])
            notes["cuda:barrier(device_ids)"] += 1
        return original_barrier(*args, **kwargs)

    distributed_c10d.barrier = barrier
    dist.barrier = barrier

    original_ddp_init = DistributedDataParallel.__init__

    @functools.wraps(original_ddp_init)
    def ddp_init(self, module, device_ids=None, output_device=None, *args, **kwargs):
        if device_ids is not None or output_device is not None:
            notes["cuda:ddp_device_ids"] += 1
        original_ddp_init(self, module, None, None, *args, **kwargs)

    DistributedDataParallel.__init__ = ddp_init

    from torch.nn.modules.batchnorm import SyncBatchNorm, _BatchNorm

    original_sync_forward = SyncBatchNorm.forward

    @functools.wraps(original_sync_forward)
    def sync_batch_norm_forward(self, input):
        # SyncBatchNorm refuses CPU inputs once a process group exists; with one process there is
        # nothing to synchronize, and it computes what plain batch norm computes.
        if input.device.type == "cpu" and _world_size(self.process_group) == 1:
            notes["cuda:SyncBatchNorm"] += 1
            return _BatchNorm.forward(self, input)
        return original_sync_forward(self, input)

    SyncBatchNorm.forward = sync_batch_norm_forward

    original_sync_check = getattr(DistributedDataParallel, "_passing_sync_batchnorm_handle", None)
    if original_sync_check is not None:

        @functools.wraps(original_sync_check)
        def sync_batch_norm_check(self, module):
            if self.device_type != "cpu":  # on the CPU DDP refuses SyncBatchNorm layers
                original_sync_check(self, module)

        DistributedDataParallel._passing_sync_batchnorm_handle = sync_batch_norm_check


def _world_size(group) -> int:
    import torch.distributed as dist

    if not dist.is_initialized():
        return 1
    return dist.get_world_size(group or dist.group.WORLD)
