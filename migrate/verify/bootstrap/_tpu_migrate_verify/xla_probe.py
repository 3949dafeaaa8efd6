"""The migrated side's view of torch_xla: XLA seeding and metrics.

The instrumentation never starts the XLA runtime itself: a script that calls torch_xla.launch must
not touch the device before it ("Runtime is already initialized"), so the XLA RNG is seeded right
after the script first asks for the device. Nor does it run any backward, so it cannot cause pitfall
P19 (a CPU backward before the XLA device exists); a script that does that itself fails here as it
would on a TPU host, and the verifier says so.
"""

from __future__ import annotations

import functools

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met


class XlaProbe:
    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._seeded = False
        torch_xla.device = self._seeding_device(torch_xla.device)

    def _seeding_device(self, device):
        @functools.wraps(device)
        def seeding_device(*args, **kwargs):
            starting = not self._seeded and not self.ready()
            result = device(*args, **kwargs)
            self._seeded = True
            if starting:  # seed once, at start-up, never in the middle of the run
                xm.set_rng_state(self._seed)
            return result

        return seeding_device

    def ready(self) -> bool:
        return bool(torch_xla._XLAC._xla_runtime_is_initialized())

    def counters(self) -> dict | None:
        """Cumulative metric counts; host-side reads only (no device->host transfer)."""
        if not self.ready():
            return None
        xm.wait_device_ops()  # ExecuteTime is recorded asynchronously

        def samples(name: str) -> int:
            data = met.metric_data(name)
            return int(data[0]) if data else 0

        return {
            "compilations": samples("CompileTime"),
            "executions": samples("ExecuteTime"),
            "host_transfers": samples("TransferFromDeviceTime"),
            "scalar_reads": int(met.counter_value("aten::_local_scalar_dense") or 0),
        }

    def fallback_ops(self) -> list[str]:
        return sorted(met.executed_fallback_ops())

    def sync(self) -> None:
        torch_xla.sync()
        xm.wait_device_ops()

    def global_ordinal(self) -> int:
        import torch_xla.runtime as xr

        return int(xr.global_ordinal())
