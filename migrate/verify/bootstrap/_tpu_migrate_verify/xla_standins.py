"""Migrated side: CPU stand-ins for the TPU runtime APIs that XLA:CPU cannot run (torch_xla 2.9).

A TPU runs these, XLA:CPU does not, so a correct migration would crash here:

- ``xm.get_memory_info`` / ``torch_xla._XLAC._xla_memory_info``: "UNIMPLEMENTED: GetAllocatorStats is
  not supported". Stand-in: the same keys (bytes_used, bytes_limit, peak_bytes_used) for this
  process's host memory (resident size, physical memory, peak resident size).
- ``torch_xla._internal.tpu.get_tpu_env`` / ``get_worker_ips`` (and so ``version()``,
  ``get_tpu_type()``, ``worker_id()``, ``num_tpu_workers()``...): they query the GCE metadata
  server. Stand-in: one host with one chip (``v5litepod-1``). The TPU_SKIP_MDS_QUERY variables
  still win.
- ``torch_xla._internal.tpu.num_available_devices``: counts the TPU chips on the PCI bus, 0 here.
  Lightning's ``XLAAccelerator.is_available()`` / ``auto_device_count()`` are built on it, so
  ``Trainer(accelerator="tpu")`` refuses to start. Stand-in: the XLA:CPU devices
  (``CPU_NUM_DEVICES``, 1 in a verify run), as many as the one-chip TPU above has.
- ``torch_xla.runtime.get_master_ip``: "IP discovery not supported for device: CPU". Stand-in:
  ``localhost``, what a single TPU host gets.
- ``torch_xla.amp.autocast``: on a non-TPU device it never initialises (AttributeError on entry).
  Stand-in: what it is on a TPU, ``torch.autocast("xla", dtype=torch.bfloat16)`` (which the verifier
  then switches off unless --keep-autocast).

The profiler (start_server, trace, Trace, start_trace), the runtime queries (xr.*), xla_device_hw and
get_stablehlo run on XLA:CPU and are left alone. Functions are replaced on their module and in every
loaded module that imported them by name; each use is counted in the notes ("xla-standin:NAME").
Nothing here starts the XLA runtime: a stand-in asks for the device only where the real API does.
"""

from __future__ import annotations

import functools
import os
import resource
import warnings
from collections import Counter

import torch
import torch_xla
import torch_xla._internal.tpu as tpu
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

from .patching import replace

KEY = "xla-standin:"
TPU_ENV = {  # a single-host, single-chip TPU VM, in the keys get_tpu_env returns
    "ACCELERATOR_TYPE": "v5litepod-1",
    "TPU_PROCESS_BOUNDS": "1,1,1",
    "TPU_CHIPS_PER_PROCESS_BOUNDS": "1,1,1",
    "WORKER_ID": "0",
}


def install(notes: Counter) -> None:
    original_memory_info = torch_xla._XLAC._xla_memory_info
    original_tpu_env, original_worker_ips = tpu.get_tpu_env, tpu.get_worker_ips
    original_master_ip = xr.get_master_ip
    original_device_count = tpu.num_available_devices

    def _xla_memory_info(device: str) -> dict:
        if _hardware(device) != "CPU":
            return original_memory_info(device)
        notes[KEY + "torch_xla._XLAC._xla_memory_info"] += 1
        return host_memory_info()

    def get_memory_info(device=None) -> dict:
        if device is None:
            device = torch_xla.device()  # as the real one does (xm.xla_device())
        if _hardware(device) != "CPU":
            return original_memory_info(str(device))
        notes[KEY + "xm.get_memory_info"] += 1
        return host_memory_info()

    def get_tpu_env():
        if tpu._using_env_vars():
            return original_tpu_env()
        notes[KEY + "tpu.get_tpu_env"] += 1
        return dict(TPU_ENV)

    def get_worker_ips():
        if tpu._using_env_vars():
            return original_worker_ips()
        notes[KEY + "tpu.get_worker_ips"] += 1
        return ["localhost"]

    def get_master_ip():
        if xr.device_type() in ("TPU", "NEURON"):
            return original_master_ip()
        notes[KEY + "xr.get_master_ip"] += 1
        return "localhost"

    def num_available_devices() -> int:
        if xr.device_type() != "CPU" or tpu.num_available_chips():
            return original_device_count()
        notes[KEY + "tpu.num_available_devices"] += 1
        return int(os.environ.get("CPU_NUM_DEVICES") or 1)

    replace(torch_xla._XLAC, "_xla_memory_info", _xla_memory_info)
    replace(xm, "get_memory_info", get_memory_info)
    replace(tpu, "get_tpu_env", get_tpu_env)
    replace(tpu, "get_worker_ips", get_worker_ips)
    replace(xr, "get_master_ip", get_master_ip)
    replace(tpu, "num_available_devices", num_available_devices)

    from . import startup

    # torch_xla.amp is not loaded by `import torch_xla`: patch it when the script imports it.
    startup._AFTER_IMPORT.register(
        "torch_xla.amp.autocast_mode", lambda module: _patch_autocast(module.autocast, notes)
    )


def _hardware(device) -> str | None:
    try:
        return xm.xla_device_hw(device)
    except Exception:  # not an XLA device: let the real API give its own error
        return None


def host_memory_info() -> dict:
    page = os.sysconf("SC_PAGE_SIZE")
    try:
        with open("/proc/self/statm") as statm:
            used = int(statm.read().split()[1]) * page
    except (OSError, ValueError, IndexError):
        used = 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    try:
        limit = page * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        limit = 16 * 2**30
    return {"bytes_used": used, "bytes_limit": limit, "peak_bytes_used": max(peak, used)}


def _patch_autocast(autocast, notes: Counter) -> None:
    original_init = autocast.__init__

    @functools.wraps(original_init)
    def __init__(self, device, enabled=True, dtype=None, cache_enabled=True):
        if "xla" not in str(device) or _hardware(device) in (None, "TPU", "NEURON"):
            return original_init(self, device, enabled, dtype, cache_enabled)
        notes[KEY + "torch_xla.amp.autocast"] += 1
        if dtype is None:
            dtype = torch.bfloat16
        if dtype != torch.bfloat16:  # as on a TPU: only bf16, anything else disables it
            warnings.warn("XLA autocast supports only torch.bfloat16: disabling autocast")
            enabled = False
        self._enabled, self._xla_device, self._dtype = enabled, _hardware(device), dtype
        torch.amp.autocast_mode.autocast.__init__(
            self, "xla", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled
        )

    autocast.__init__ = __init__
