"""TPU104: map CUDA runtime calls to their torch_xla equivalents, delete the no-ops, flag the rest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Union

import libcst as cst
from libcst.metadata import ParentNodeProvider

from migrate.fastcst.facts import FileFacts
from ._base import (
    TORCH_XLA,
    XM,
    XR,
    FindingDoc,
    ImportSpec,
    Invalid,
    Safety,
    TpuCodemod,
    Valid,
    code_of,
)
from ._statements import AppliesStatementEdits, Block


@dataclass(frozen=True)
class Replace:
    """Replace the call with ``template`` (``{device}``: the XLA device, ``{q}``: a quote that is
    safe at the call site). ``keep_args`` keeps the call's own arguments; ``drop_per_step``
    deletes the call instead when it runs on every step of an untimed training loop."""

    template: str
    imports: tuple[ImportSpec, ...]
    keep_args: bool = False
    drop_per_step: bool = False


@dataclass(frozen=True)
class Remove:
    """Delete the statement: the call does nothing useful on XLA."""


@dataclass(frozen=True)
class Flag:
    """Leave the code and report ``code`` with ``message`` (and an inline marker)."""

    code: str
    message: str


@dataclass(frozen=True)
class Keep:
    """Not this rule's business (another rule owns it)."""


Action = Union[Replace, Remove, Flag, Keep]

CUDA_ONLY = "TPU201"
CUSTOM_KERNEL = "TPU202"

GENERIC = Flag(CUDA_ONLY, "CUDA-only API with no XLA equivalent")
STREAMS = Flag(CUDA_ONLY, "CUDA streams have no XLA equivalent; XLA orders device work itself")
EVENTS = Flag(CUDA_ONLY, "CUDA events have no XLA equivalent; time with xm.wait_device_ops()")
GRAPHS = Flag(CUDA_ONLY, "CUDA graphs have no XLA equivalent; torch_xla.compile caches graphs")
NVTX = Flag(CUDA_ONLY, "NVTX ranges are CUDA-only; use xp.Trace from torch_xla.debug.profiler")
AMP = Flag(
    CUDA_ONLY, "use torch.autocast('xla', dtype=torch.bfloat16); GradScaler is not needed with bf16"
)
DEVICE_INDEX = Flag(CUDA_ONLY, "a CUDA device index has no meaning on XLA; use torch_xla.device()")
RESERVED = Flag(CUDA_ONLY, "no reserved-memory stat on XLA; xm.get_memory_info(device) has bytes_*")
MEMORY_REPORT = Flag(CUDA_ONLY, "no CUDA memory report on XLA; use xm.get_memory_info(device)")
PROPERTIES = Flag(
    CUDA_ONLY, "no device properties on XLA; xm.xla_device_kind(device) names the chip"
)
RNG_STATE = Flag(CUDA_ONLY, "use xm.get_rng_state() / xm.set_rng_state() for the XLA generator")
OOM = Flag(CUDA_ONLY, "XLA reports out-of-memory as RuntimeError (RESOURCE_EXHAUSTED)")
CUDNN = Flag(CUDA_ONLY, "cuDNN does not exist on XLA; this has no effect on TPU")
CUDA_BACKEND = Flag(CUDA_ONLY, "torch.backends.cuda settings have no effect on XLA")
FP32_MATMUL = Flag(
    CUDA_ONLY, "for fp32 matmuls on TPU use torch_xla.backends.set_mat_mul_precision('highest')"
)
CPP_EXTENSION = Flag(
    CUSTOM_KERNEL, "custom C++/CUDA kernels do not run on XLA; use XLA ops or a Pallas kernel"
)
TRITON = Flag(CUSTOM_KERNEL, "Triton kernels do not run on TPU; use XLA ops or a Pallas kernel")
JITERATOR = Flag(CUSTOM_KERNEL, "jiterator compiles CUDA kernels; use XLA ops or a Pallas kernel")
CUDA_PROFILER = Flag(
    CUDA_ONLY, "CUDA profiler control; use xp.start_server / xp.trace from torch_xla.debug.profiler"
)
BEFORE_LAUNCH = "no XLA call may run before launch; move this into the launched function"
REMOVABLE_HERE = "CUDA-only API with no XLA equivalent; drop this use"

WAIT_DEVICE_OPS = Replace("xm.wait_device_ops()", (XM,), drop_per_step=True)
XLA_MANUAL_SEED = Replace("torch_xla.manual_seed()", (TORCH_XLA,), keep_args=True)


def _memory_info(key: str) -> Replace:
    return Replace("xm.get_memory_info({device})[{q}%s{q}]" % key, (XM,))


# Qualified name -> action, for calls and for any other reference to the name.
CALLS: dict[str, Action] = {
    "torch.cuda.is_available": Keep(),  # TPU128 collapses branches on it
    "torch.cuda.synchronize": WAIT_DEVICE_OPS,
    "torch.cuda.empty_cache": Remove(),
    "torch.cuda.reset_peak_memory_stats": Remove(),
    "torch.cuda.reset_max_memory_allocated": Remove(),
    "torch.cuda.reset_max_memory_cached": Remove(),
    "torch.cuda.reset_accumulated_memory_stats": Remove(),
    "torch.cuda.set_device": Remove(),
    "torch.cuda.init": Remove(),
    "torch.cuda.ipc_collect": Remove(),
    "torch.cuda.manual_seed": XLA_MANUAL_SEED,
    "torch.cuda.manual_seed_all": XLA_MANUAL_SEED,
    "torch.cuda.device_count": Replace("torch_xla.device_count()", (TORCH_XLA,)),
    "torch.cuda.is_bf16_supported": Replace("xr.is_bf16_supported()", (XR,)),
    "torch.cuda.memory_allocated": _memory_info("bytes_used"),
    "torch.cuda.max_memory_allocated": _memory_info("peak_bytes_used"),
    "torch.cuda.get_device_name": Replace("xm.xla_device_kind({device})", (XM,)),
    "torch.cuda.current_device": DEVICE_INDEX,
    "torch.cuda.device": DEVICE_INDEX,
    "torch.cuda.memory_reserved": RESERVED,
    "torch.cuda.max_memory_reserved": RESERVED,
    "torch.cuda.memory_cached": RESERVED,
    "torch.cuda.max_memory_cached": RESERVED,
    "torch.cuda.memory_summary": MEMORY_REPORT,
    "torch.cuda.memory_stats": MEMORY_REPORT,
    "torch.cuda.mem_get_info": MEMORY_REPORT,
    "torch.cuda.get_device_properties": PROPERTIES,
    "torch.cuda.get_device_capability": PROPERTIES,
    "torch.cuda.get_rng_state": RNG_STATE,
    "torch.cuda.set_rng_state": RNG_STATE,
    "torch.cuda.get_rng_state_all": RNG_STATE,
    "torch.cuda.set_rng_state_all": RNG_STATE,
    "torch.cuda.Stream": STREAMS,
    "torch.cuda.ExternalStream": STREAMS,
    "torch.cuda.stream": STREAMS,
    "torch.cuda.current_stream": STREAMS,
    "torch.cuda.default_stream": STREAMS,
    "torch.cuda.set_stream": STREAMS,
    "torch.cuda.Event": EVENTS,
    "torch.cuda.CUDAGraph": GRAPHS,
    "torch.cuda.graph": GRAPHS,
    "torch.cuda.make_graphed_callables": GRAPHS,
    "torch.cuda.graph_pool_handle": GRAPHS,
    "torch.cuda.is_current_stream_capturing": GRAPHS,
    "torch.cuda.StreamContext": STREAMS,
    # NVTX ranges emitted by the autograd profiler; not rewritten to xp.Trace: emit_nvtx
    # annotates every op, xp.Trace only the block it wraps.
    "torch.autograd.profiler.emit_nvtx": NVTX,
    "torch.library.triton_op": TRITON,
    "torch.library.wrap_triton": TRITON,
    "torch.cuda.OutOfMemoryError": OOM,
    "torch.utils.cpp_extension.load": CPP_EXTENSION,
    "torch.utils.cpp_extension.load_inline": CPP_EXTENSION,
    "torch.utils.cpp_extension.CUDAExtension": CPP_EXTENSION,
    "torch.utils.cpp_extension.CppExtension": CPP_EXTENSION,
}
# Namespace prefix -> finding for names CALLS does not list; the longest prefix wins.
NAMESPACES: dict[str, Flag] = {
    "torch.cuda.": GENERIC,
    "torch.cuda.amp.": AMP,
    "torch.cuda.nvtx.": NVTX,
    "torch.cuda.graphs.": GRAPHS,
    "torch.cuda.streams.": STREAMS,
    "torch.cuda.profiler.": CUDA_PROFILER,
    "torch.cuda.jiterator.": JITERATOR,
    "torch.utils.cpp_extension.": CPP_EXTENSION,
    "torch.backends.cudnn.": CUDNN,
    "torch.backends.cuda.": CUDA_BACKEND,
}
# Backend switch -> finding when a value other than a literal True is assigned to it
# (None: the assignment is deleted whatever the value).
BACKEND_SWITCHES: dict[str, Flag | None] = {
    "torch.backends.cudnn.benchmark": None,
    "torch.backends.cudnn.deterministic": None,
    "torch.backends.cudnn.enabled": None,
    "torch.backends.cudnn.allow_tf32": FP32_MATMUL,
    "torch.backends.cuda.matmul.allow_tf32": FP32_MATMUL,
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": None,
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": None,
}
# Calls that start worker processes: the XLA runtime must not be touched before them.
LAUNCHERS = frozenset(
    {
        "torch.multiprocessing.spawn",
        "torch.multiprocessing.start_processes",
        "torch_xla.launch",
        "torch_xla.distributed.xla_multiprocessing.spawn",
    }
)
# A call to one of these in a loop body means the loop is being timed.
TIMERS = frozenset(
    {
        "time.time",
        "time.time_ns",
        "time.perf_counter",
        "time.perf_counter_ns",
        "time.monotonic",
        "time.monotonic_ns",
    }
)
SCOPE_BOUNDARIES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
LOOPS = (cst.For, cst.While)


# the first names of everything mapped ("torch")
_MAPPED_ROOTS = tuple(sorted({name.partition(".")[0] for name in (*CALLS, *NAMESPACES)}))


def action_for(qualified_name: str) -> Action | None:
    if qualified_name in CALLS:
        return CALLS[qualified_name]
    prefixes = [prefix for prefix in NAMESPACES if qualified_name.startswith(prefix)]
    return NAMESPACES[max(prefixes, key=len)] if prefixes else None


class CudaRuntimeCalls(AppliesStatementEdits, TpuCodemod):
    """
    What it does
        Maps the CUDA runtime API to torch_xla 2.9:

        - ``torch.cuda.synchronize()`` -> ``xm.wait_device_ops()``; deleted instead when it runs on
          every step of a training loop (the innermost loop around it calls ``.backward()`` in its
          own body, not in a nested loop: a per-epoch wait stays) that is not being timed (no
          ``time.time()`` / ``time.perf_counter()`` call in that loop: benchmarks keep the wait).
        - ``torch.cuda.manual_seed[_all](s)`` -> ``torch_xla.manual_seed(s)`` (two identical
          adjacent results are merged into one);
          ``torch.cuda.device_count()`` -> ``torch_xla.device_count()`` (devices of this process);
          ``torch.cuda.is_bf16_supported()`` -> ``xr.is_bf16_supported()``.
        - ``torch.cuda.memory_allocated()`` -> ``xm.get_memory_info(device)["bytes_used"]`` and
          ``max_memory_allocated()`` -> ``["peak_bytes_used"]``: bytes, like the CUDA calls, for
          the ``device`` variable in scope (else ``torch_xla.device()``); the CUDA device argument
          is dropped. ``get_memory_info`` is unimplemented on XLA:CPU (it raises there).
          ``memory_reserved()`` is flagged, not mapped: XLA has no caching-allocator reserve, and
          ``bytes_limit`` is the device capacity, a different number.
        - ``torch.cuda.get_device_name()`` -> ``xm.xla_device_kind(device)``: the PJRT device
          kind (a chip name such as a TPU generation; ``'cpu'`` on XLA:CPU), the closest
          analogue of a GPU model name.
        - Deleted statements: ``torch.cuda.empty_cache()``, ``reset_peak_memory_stats()``,
          ``reset_max_memory_allocated()``, ``set_device(...)``, ``init()``, ``ipc_collect()``, and
          assignments to ``torch.backends.cudnn.{benchmark, deterministic, enabled}`` and
          ``torch.backends.cuda.matmul.allow_{fp16,bf16}_reduced_precision_reduction``, under any
          import spelling (``import torch.backends.cudnn as cudnn``, ``from torch import cuda``).
          An ``allow_tf32`` switch is deleted only when set to ``True``. The comment lines right
          above a deleted statement go with it (they described it) unless the next statement
          follows it directly (they may describe both); lines above them move to the next
          statement; an ``if`` left empty goes when its test has no side effects, any other
          block left empty gets ``pass`` (``codemods/_statements.py``); imports left unused
          (``cudnn``) are removed.

        ``torch.cuda.current_device()`` is flagged, not mapped: ``xr.local_ordinal()`` numbers
        processes, and each launched process sees a single device, ``xla:0``. ``import torch`` is
        kept even if a rewrite leaves it unused.

        Findings (an inline ``# TODO(tpu-migrate):`` marker above the statement, one per code per
        statement; every occurrence is reported):

        - TPU201, a CUDA-only API with no XLA equivalent: streams, events, CUDA graphs, NVTX,
          ``torch.cuda.amp`` (use ``torch.autocast('xla', dtype=torch.bfloat16)``; no GradScaler
          with bf16), device properties and indexes (``current_device``), reserved-memory and
          memory reports, CUDA RNG state, ``torch.cuda.OutOfMemoryError``, ``torch.backends.cudnn``
          / ``torch.backends.cuda`` uses that were not deleted, ``allow_tf32`` set to anything but
          ``True`` (fp32 matmuls on TPU need ``set_mat_mul_precision('highest')``), any other
          ``torch.cuda.*`` name, and a mapped call in a function (or module) that also starts
          worker processes (``mp.spawn``, ``torch_xla.launch``): its XLA form would start the
          runtime before the launch, which torch_xla forbids, so it must move into the worker.
          Hurts on TPU because the CUDA call raises, silently does nothing, or returns a
          misleading value (0 devices, 0 bytes). Fix by hand with the hint in the message.
        - TPU202, a custom kernel: ``torch.utils.cpp_extension.load / load_inline /
          CUDAExtension / CppExtension``, ``import triton``, ``@triton.*`` decorators. The
          kernel cannot run on a TPU; rewrite it with XLA ops or as a Pallas kernel.

        Not handled: ``torch.cuda.is_available()`` (TPU128 collapses branches on it), ``torch.amp``
        / ``torch.autocast('cuda')`` (a later AMP rule), a trailing same-line comment of a deleted
        statement (it describes the deleted code and goes with it).

    Why
        torch_xla 2.9 has no CUDA: ``torch.cuda.synchronize()``, ``set_device`` and
        ``reset_peak_memory_stats`` raise on a TPU host, memory stats return 0 and
        ``device_count()`` returns 0, so ported scripts crash or log nonsense. cuDNN switches and
        ``empty_cache`` do nothing there. ``torch.cuda.manual_seed`` does not seed the XLA RNG
        (neither does ``torch.manual_seed``). Waiting for the device on every step serialises
        tracing and execution, so a per-step ``synchronize`` is deleted, not translated.

    Example
        Before::

            import torch
            import torch.backends.cudnn as cudnn

            cudnn.benchmark = True
            torch.cuda.manual_seed_all(0)
            torch.cuda.synchronize()

        After::

            import torch
            import torch_xla
            import torch_xla.core.xla_model as xm

            torch_xla.manual_seed(0)
            xm.wait_device_ops()
    """

    CODE = "TPU104"
    NAME = "cuda-runtime-calls"
    SUMMARY = "Map torch.cuda runtime calls to torch_xla, delete CUDA no-ops, flag CUDA-only APIs"
    SAFETY = Safety.SAFE
    FINDINGS = {
        CUDA_ONLY: FindingDoc(
            "CUDA-only API with no XLA equivalent",
            why="The CUDA runtime is not there on a TPU host: the call raises, silently does "
            "nothing, or returns a misleading value (0 devices, 0 bytes). XLA orders device work, "
            "manages memory and caches compiled graphs itself, so streams, events, CUDA graphs, "
            "NVTX ranges and cuDNN switches have nothing to act on.",
            what_to_do="Follow the hint in the marker: use the XLA counterpart where there is one "
            "(xm.wait_device_ops() to wait, xm.get_memory_info(device) for memory, "
            "torch.autocast('xla', dtype=torch.bfloat16) for AMP, xp.Trace(name) from "
            "torch_xla.debug.profiler for profiler ranges, torch_xla.manual_seed for seeding), "
            "otherwise delete the use. Code that must still run on GPUs can keep it behind a "
            "device-type check.",
        ),
        CUSTOM_KERNEL: FindingDoc(
            "custom CUDA/C++ or Triton kernel that cannot run on TPU",
            why="CUDA C++ extensions, jiterator and Triton kernels compile for NVIDIA GPUs. XLA "
            "can neither run nor fuse them, so the call fails on a TPU (or the extension does "
            "not even build).",
            what_to_do="Express the operation with torch ops that XLA lowers (the compiler "
            "usually fuses them as well as the hand-written kernel), or write a Pallas kernel "
            "for TPU (torch_xla.experimental.custom_kernel); keep the CUDA path behind a device "
            "check if the script must still run on GPUs.",
        ),
    }
    TRIGGERS = ("cuda", "cudnn", "triton", "cpp_extension", "nvtx")

    @classmethod
    def may_act(cls, facts: FileFacts) -> bool:
        return facts.uses(*CALLS, *(prefix.rstrip(".") for prefix in NAMESPACES), "triton")

    VALID = [
        Valid(
            "import mylib.cuda as cuda\n\ncuda.synchronize()\ncuda.empty_cache()\n"
            "cuda.manual_seed(0)\n",
            why="a user module named cuda is not torch.cuda",
        ),
        Valid(
            "import torch\nimport torch_xla\nimport torch_xla.core.xla_model as xm\n\n"
            "torch.manual_seed(0)\ntorch_xla.manual_seed(0)\nn = torch_xla.device_count()\n"
            "xm.wait_device_ops()\n",
            why="already migrated",
        ),
        Valid(
            'import torch\n\n\ndef report():\n    """Call torch.cuda.synchronize() before timing."""\n'
            '    print("torch.cuda.empty_cache() is a no-op on TPU")\n'
            "    return 'torch.backends.cudnn.benchmark = True'\n",
            why="strings and docstrings that mention CUDA calls",
        ),
        Valid(
            "import torch\n\nuse_cuda = torch.cuda.is_available()\n",
            why="is_available belongs to the device-placement rule",
        ),
        Valid(
            "from types import SimpleNamespace\n\n"
            "cfg = SimpleNamespace(cudnn=SimpleNamespace(benchmark=False))\n"
            "cfg.cudnn.benchmark = True\nstream = cfg.cuda_stream\n",
            why="a config object with cudnn / cuda attributes is not torch",
        ),
        Valid(
            "import torch\n\n\ndef step(torch):\n    torch.cuda.synchronize()\n",
            why="a parameter shadows the torch module",
        ),
        Valid(
            "import triton_utils\n\n\n@triton_utils.cached\ndef f():\n    pass\n",
            why="a module whose name starts with triton is not Triton",
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n\nx = torch.ones(2)\ntorch.cuda.synchronize()\n",
            "import torch\nimport torch_xla.core.xla_model as xm\n\nx = torch.ones(2)\n"
            "xm.wait_device_ops()\n",
            why="synchronize outside a training loop waits for the device",
        ),
        Invalid(
            "from torch import cuda\n\ncuda.synchronize()\ncuda.empty_cache()\n",
            "import torch_xla.core.xla_model as xm\n\nxm.wait_device_ops()\n",
            why="from torch import cuda; the import goes once unused",
        ),
        Invalid(
            "from torch.cuda import empty_cache, synchronize\n\nsynchronize(0)\nempty_cache()\n",
            "import torch_xla.core.xla_model as xm\n\nxm.wait_device_ops()\n",
            why="names imported from torch.cuda; the device argument is dropped",
        ),
        Invalid(
            "import torch\n\n\ndef main_worker(gpu, args):\n    if args.gpu is not None:\n"
            "        torch.cuda.set_device(args.gpu)\n    return torch.zeros(1)\n",
            "import torch\n\n\ndef main_worker(gpu, args):\n    return torch.zeros(1)\n",
            why="an if block left empty goes with its test, which has no side effects",
        ),
        Invalid(
            "import torch\n\n\ndef main_worker(gpu, args):\n    if args.setup_gpu():\n"
            "        torch.cuda.set_device(args.gpu)\n    return torch.zeros(1)\n",
            "import torch\n\n\ndef main_worker(gpu, args):\n    if args.setup_gpu():\n"
            "        pass\n    return torch.zeros(1)\n",
            why="the only statement of an if block becomes pass when the test is a call that "
            "may do something",
        ),
        Invalid(
            "import torch\n\nif args.setup_gpu(): torch.cuda.set_device(args.gpu)\n"
            "x = torch.zeros(1); torch.cuda.empty_cache(); y = x + 1\n",
            "import torch\n\nif args.setup_gpu(): pass\nx = torch.zeros(1); y = x + 1\n",
            why="one-line suites and semicolon-separated statements",
        ),
        Invalid(
            "import torch\n\nif args.gpu is not None: torch.cuda.set_device(args.gpu)\n"
            "x = torch.zeros(1)\n",
            "import torch\n\nx = torch.zeros(1)\n",
            why="a one-line if left empty goes with its test, which has no side effects",
        ),
        Invalid(
            "import torch\n\n\ndef finish(model):\n    model.eval()\n    # last: drop the cache\n"
            "    torch.cuda.empty_cache()\n\n\nx = 1\n",
            "import torch\n\n\ndef finish(model):\n    model.eval()\n\n\nx = 1\n",
            why="the comment above a deleted last statement goes with it",
        ),
        Invalid(
            "import torch\n\n# determinism settings for the run\n"
            "torch.backends.cudnn.deterministic = True\n"
            "torch.use_deterministic_algorithms(True)\n",
            "import torch\n\n# determinism settings for the run\n"
            "torch.use_deterministic_algorithms(True)\n",
            why="a comment above a group of statements stays above what is left of the group",
        ),
        Invalid(
            "import torch\n\n\ndef main_worker(gpu, args):\n    torch.cuda.set_device(gpu)\n\n"
            "    model = build_model(args)\n    return model\n",
            "import torch\n\n\ndef main_worker(gpu, args):\n    model = build_model(args)\n"
            "    return model\n",
            why="a block's new first statement starts right below its header",
        ),
        Invalid(
            "import torch\nimport torch.backends.cudnn as cudnn\n\n"
            "model = torch.nn.Linear(2, 2)\ncudnn.benchmark = True\n"
            "cudnn.deterministic = False\ntorch.backends.cudnn.enabled = True\n",
            "import torch\n\nmodel = torch.nn.Linear(2, 2)\n",
            why="import torch.backends.cudnn as cudnn: switches deleted, the import released",
        ),
        Invalid(
            "import torch\nfrom torch.backends import cudnn\n\n\ndef setup(args):\n"
            "    cudnn.benchmark = not args.deterministic\n    return torch.Generator()\n",
            "import torch\n\n\ndef setup(args):\n    return torch.Generator()\n",
            why="from torch.backends import cudnn",
        ),
        Invalid(
            "import torch\n\ntorch.backends.cuda.matmul.allow_tf32 = True\n"
            "torch.backends.cudnn.allow_tf32 = True\n"
            "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False\n"
            "model = torch.nn.Linear(2, 2)\n",
            "import torch\n\nmodel = torch.nn.Linear(2, 2)\n",
            why="tf32 allowed / reduced-precision switches are TPU defaults already",
        ),
        Invalid(
            "import torch\n\n"
            "torch.backends.cudnn.benchmark = torch.backends.cudnn.deterministic = True\n"
            "x = torch.zeros(1)\n",
            "import torch\n\nx = torch.zeros(1)\n",
            why="chained assignment of two switches",
        ),
        Invalid(
            "import torch\n\ntorch.backends.cuda.matmul.allow_tf32 = False\n",
            "import torch\n\n"
            "# TODO(tpu-migrate): TPU201 for fp32 matmuls on TPU use "
            "torch_xla.backends.set_mat_mul_precision('highest')\n"
            "torch.backends.cuda.matmul.allow_tf32 = False\n",
            findings=["TPU201"],
            why="asking for full fp32 matmuls is a decision for a human",
        ),
        Invalid(
            "import torch\n\nif torch.backends.cudnn.is_available():\n    print(cudnn_version)\n",
            "import torch\n\n"
            "# TODO(tpu-migrate): TPU201 cuDNN does not exist on XLA; this has no effect on TPU\n"
            "if torch.backends.cudnn.is_available():\n    print(cudnn_version)\n",
            findings=["TPU201"],
            why="a cudnn read that is not a deleted switch",
        ),
        Invalid(
            "import random\n\nimport torch\n\n\ndef seed_everything(seed):\n"
            "    random.seed(seed)\n    torch.manual_seed(seed)\n    torch.cuda.manual_seed(seed)\n"
            "    torch.cuda.manual_seed_all(seed)\n",
            "import random\n\nimport torch\nimport torch_xla\n\n\ndef seed_everything(seed):\n"
            "    random.seed(seed)\n    torch.manual_seed(seed)\n    torch_xla.manual_seed(seed)\n",
            why="CUDA seeding becomes XLA seeding; the duplicate is merged",
        ),
        Invalid(
            "import torch\n\nn = torch.cuda.device_count()\nbf16 = torch.cuda.is_bf16_supported()\n",
            "import torch\nimport torch_xla\nimport torch_xla.runtime as xr\n\n"
            "n = torch_xla.device_count()\n"
            "bf16 = xr.is_bf16_supported()\n",
            why="device count and bf16 support",
        ),
        Invalid(
            "import torch\n\nname = torch.cuda.get_device_name(0)\n"
            "used = torch.cuda.memory_allocated()\n",
            "import torch\nimport torch_xla\nimport torch_xla.core.xla_model as xm\n\n"
            "name = xm.xla_device_kind(torch_xla.device())\n"
            'used = xm.get_memory_info(torch_xla.device())["bytes_used"]\n',
            why="no device variable in scope: torch_xla.device()",
        ),
        Invalid(
            "# Copyright 2025 Example Inc.\nimport triton\n",
            "# Copyright 2025 Example Inc.\n"
            "# TODO(tpu-migrate): TPU202 Triton kernels do not run on TPU; use XLA ops or a "
            "Pallas kernel\nimport triton\n",
            findings=["TPU202"],
            why="a marker on a file's first statement is not repeated (it parses into the header)",
        ),
        Invalid(
            "import torch\n\n\ndef train(model, loader, opt):\n"
            "    for step, (x, y) in enumerate(loader):\n        model(x, y).backward()\n"
            "        opt.step()\n        if step % 100 == 0:\n"
            "            # make the log line accurate\n            torch.cuda.synchronize()\n",
            "import torch\n\n\ndef train(model, loader, opt):\n"
            "    for step, (x, y) in enumerate(loader):\n        model(x, y).backward()\n"
            "        opt.step()\n",
            why="a periodic untimed wait inside the training loop is deleted too, with its if",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._call_rewrites: dict[int, Replace] = {}  # id(original Call) -> rewrite
        self._removed_statements: set[int] = set()  # id(original small statement)
        self._seed_lines: set[int] = set()  # id(original line) that became one seeding call
        self._launcher_scopes: dict[int, bool] = {}

    # ----------------------------------------------------------------- deciding (original nodes)
    def visit_Import(self, node: cst.Import) -> bool:
        if any(_is_triton_module(code_of(a.name)) for a in node.names):
            self.flag(node, TRITON.code, TRITON.message)
        return False  # imported names are bindings, not uses

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        module = code_of(node.module) if node.module else ""
        if not node.relative and _is_triton_module(module):
            self.flag(node, TRITON.code, TRITON.message)
        return False

    def visit_Decorator(self, node: cst.Decorator) -> None:
        target = node.decorator.func if isinstance(node.decorator, cst.Call) else node.decorator
        if any(_is_triton_module(name) for name in self.qualified_names(target)):
            self.flag(node, TRITON.code, TRITON.message)

    def visit_Assign(self, node: cst.Assign) -> bool:
        switches = [self._backend_switch(target.target) for target in node.targets]
        if not all(switches):
            return True
        is_true = isinstance(node.value, cst.Name) and node.value.value == "True"
        flags = [BACKEND_SWITCHES[name] for name in switches if BACKEND_SWITCHES[name]]
        if flags and not is_true:
            self.flag(node, flags[0].code, flags[0].message)
            return False
        if self._remove_statement(node):
            for target in node.targets:
                self._release(target.target)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self._visit_reference(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._visit_reference(node)

    def _visit_reference(self, node: cst.Name | cst.Attribute) -> None:
        parent = self.get_metadata(ParentNodeProvider, node, None)
        if isinstance(parent, cst.Attribute) or not _is_dotted_name(node):
            return  # only a whole dotted name counts: not its parts, not `f().x`
        if not any(self.may_be_under(node, root) for root in _MAPPED_ROOTS):
            return
        matches = [(name, action_for(name)) for name in sorted(self.qualified_names(node))]
        matches = [(name, action) for name, action in matches if action is not None]
        if not matches:
            return
        _, action = matches[0]
        call = parent if isinstance(parent, cst.Call) and parent.func is node else None
        self._apply(action, node, call)

    def _apply(self, action: Action, node: cst.CSTNode, call: cst.Call | None) -> None:
        if isinstance(action, Keep):
            return
        if isinstance(action, Flag):
            self.flag(call or node, action.code, action.message)
        elif call is None:
            hint = (
                action.template.format(device="device", q='"')
                if isinstance(action, Replace)
                else None
            )
            message = f"CUDA-only API; use {hint} instead" if hint else REMOVABLE_HERE
            self.flag(node, CUDA_ONLY, message)
        elif isinstance(action, Remove):
            if not self._remove_call_statement(call):
                self.flag(call, CUDA_ONLY, REMOVABLE_HERE)
        elif action.drop_per_step and self._runs_every_untimed_step(call):
            self._remove_call_statement(call)
        elif self._in_launcher_scope(call):
            self.flag(call, CUDA_ONLY, BEFORE_LAUNCH)
        else:
            self._plan_replacement(action, call)

    def _plan_replacement(self, action: Replace, call: cst.Call) -> None:
        self._call_rewrites[id(call)] = action
        if action is XLA_MANUAL_SEED:
            statement = self._statement_of_call(call)
            line = self.get_metadata(ParentNodeProvider, statement, None) if statement else None
            if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
                self._seed_lines.add(id(line))

    def _remove_call_statement(self, call: cst.Call) -> bool:
        statement = self._statement_of_call(call)
        if statement is None or not self._remove_statement(statement):
            return False
        self._release(call.func)
        return True

    def _remove_statement(self, statement: cst.BaseSmallStatement) -> bool:
        line = self.get_metadata(ParentNodeProvider, statement, None)
        if not isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return False
        self._removed_statements.add(id(statement))
        self.record_rewrite()
        return True

    def _statement_of_call(self, call: cst.Call) -> cst.Expr | None:
        """The expression statement that is exactly ``call``, if it is one."""
        parent = self.get_metadata(ParentNodeProvider, call, None)
        return parent if isinstance(parent, cst.Expr) and parent.value is call else None

    def _release(self, reference: cst.BaseExpression) -> None:
        """Drop the import behind ``reference`` if it ends up unused, except ``import torch``:
        a PyTorch script keeps it (only toy files would lose it)."""
        root = reference
        while isinstance(root, cst.Attribute):
            root = root.value
        if not (isinstance(root, cst.Name) and root.value == "torch"):
            self.release_binding(reference)

    def _backend_switch(self, target: cst.BaseExpression) -> str | None:
        names = self.qualified_names(target) & BACKEND_SWITCHES.keys()
        return min(names) if names else None

    # ----------------------------------------------------------------- context questions
    def _runs_every_untimed_step(self, call: cst.Call) -> bool:
        """``call`` is a statement of a loop that runs ``.backward()`` and is not being timed."""
        statement = self._statement_of_call(call)
        loop = self._innermost_loop(statement) if statement is not None else None
        if loop is None:
            return False
        is_training_step = any(
            self._is_backward(node) for node in _descendants(loop.body, (*SCOPE_BOUNDARIES, *LOOPS))
        )
        is_timed = any(
            isinstance(node, cst.Call) and self.is_name(node.func, *TIMERS)
            for node in _descendants(loop.body, SCOPE_BOUNDARIES)
        )
        return is_training_step and not is_timed

    def _innermost_loop(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        child, parent = node, self.get_metadata(ParentNodeProvider, node, None)
        while parent is not None and not isinstance(parent, (*SCOPE_BOUNDARIES, cst.Module)):
            if isinstance(parent, LOOPS):
                return parent if child is parent.body else None
            child, parent = parent, self.get_metadata(ParentNodeProvider, parent, None)
        return None

    def _is_backward(self, node: cst.CSTNode) -> bool:
        if not isinstance(node, cst.Call):
            return False
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "backward":
            return True
        return self.is_name(node.func, "torch.autograd.backward")

    def _in_launcher_scope(self, node: cst.CSTNode) -> bool:
        """The function (or module) around ``node`` also starts worker processes."""
        scope = self.get_metadata(ParentNodeProvider, node, None)
        while scope is not None and not isinstance(scope, (cst.FunctionDef, cst.Module)):
            scope = self.get_metadata(ParentNodeProvider, scope, None)
        if scope is None:
            return False
        if id(scope) not in self._launcher_scopes:
            self._launcher_scopes[id(scope)] = any(
                isinstance(inner, cst.Call) and self.is_name(inner.func, *LAUNCHERS)
                for inner in _descendants(scope, SCOPE_BOUNDARIES)
            )
        return self._launcher_scopes[id(scope)]

    def _quote_for(self, node: cst.CSTNode) -> str:
        """A string quote that may appear at ``node``: inside an f-string, not the f-string's own."""
        parent = self.get_metadata(ParentNodeProvider, node, None)
        while parent is not None:
            if isinstance(parent, cst.FormattedString):
                return "'" if parent.start.endswith('"') else '"'
            parent = self.get_metadata(ParentNodeProvider, parent, None)
        return '"'

    # ----------------------------------------------------------------- rewriting
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        action = self._call_rewrites.get(id(original_node))
        if action is None:
            return updated_node
        device = ""
        if "{device}" in action.template:
            device = code_of(self.device_expression(original_node))
        new = cst.parse_expression(
            action.template.format(device=device, q=self._quote_for(original_node))
        )
        for spec in action.imports:
            self.require_import(spec)
        self._release(original_node.func)
        self.record_rewrite()
        if action.keep_args and isinstance(new, cst.Call):
            return updated_node.with_changes(func=new.func)
        return new.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        return self.edits.remove_small_statements(
            original_node, updated_node, self._removed_statements
        )

    def leave_SimpleStatementSuite(
        self, original_node: cst.SimpleStatementSuite, updated_node: cst.SimpleStatementSuite
    ) -> cst.SimpleStatementSuite:
        return self.edits.remove_small_statements(
            original_node, updated_node, self._removed_statements
        )

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        self._remove_repeated_seeds(original_node, updated_node)
        return super().leave_IndentedBlock(original_node, updated_node)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        self._remove_repeated_seeds(original_node, updated_node)
        return super().leave_Module(original_node, updated_node)

    def _remove_repeated_seeds(self, original: Block, updated: Block) -> None:
        """A seeding line that repeats the statement kept before it goes (``manual_seed`` and
        ``manual_seed_all`` became the same call)."""
        previous: cst.BaseStatement | None = None
        for old, new in zip(original.body, updated.body):
            if self.edits.is_removed(old):
                continue
            if id(old) in self._seed_lines and _same_single_statement(previous, new):
                self.edits.remove(old)
                self.record_rewrite()
                continue
            previous = new


def _is_dotted_name(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def _is_triton_module(name: str) -> bool:
    return name == "triton" or name.startswith("triton.")


def _descendants(
    node: cst.CSTNode, boundaries: tuple[type[cst.CSTNode], ...]
) -> Iterator[cst.CSTNode]:
    """Every node under ``node`` (itself excluded), not entering nested ``boundaries``."""
    for child in node.children:
        yield child
        if not isinstance(child, boundaries):
            yield from _descendants(child, boundaries)


def _same_single_statement(first: cst.BaseStatement | None, second: cst.BaseStatement) -> bool:
    """Two lines of one small statement each, with the same code."""
    lines = (first, second)
    if not all(isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 for line in lines):
        return False
    code = code_of
    return code(first.body[0]) == code(second.body[0])  # type: ignore[union-attr]
