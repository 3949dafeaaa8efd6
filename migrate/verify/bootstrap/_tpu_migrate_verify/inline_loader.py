"""Migrated side: ``pl.ParallelLoader`` (and so ``pl.MpDeviceLoader``) reads its batches in the
thread that asks for them, when it asks.

The real loader reads the wrapped DataLoader ahead, in a thread of its own. Whatever the dataset
draws from the global generators there (random transforms, the sampler's shuffle seed, FakeData's
``manual_seed``/``set_rng_state`` around each sample) then interleaves with the training thread's
draws in an order that depends on timing. The original reads one batch per step in the training
thread, and the migrated run's device draws come from the CPU generator (rng_align.py), so the two
runs would draw different noise, different masks and even different batches, by chance. Read in
line, the migrated run makes its draws in the original's order. What reaches the device is the
same batch, moved by ParallelLoader's own ``send_cpu_data_to_device``; PerDeviceLoader still syncs
at each batch as on a TPU. Each loader made is counted in the notes ("inline-loader:").
"""

from __future__ import annotations

import queue
from collections import Counter

import torch

KEY = "inline-loader:"


def install(parallel_loader, notes: Counter) -> None:
    """Replace the module's ParallelLoader; MpDeviceLoader looks it up there when iterated."""
    threaded = parallel_loader.ParallelLoader

    class ParallelLoader(threaded):
        __doc__ = threaded.__doc__

        def __init__(self, cpu_loader, devices, batchdim=0, batches_per_execution=1, **kwargs):
            devices = [torch.device(device) for device in devices]
            if len(devices) != 1:  # several devices share one read-ahead: keep the real one
                super().__init__(cpu_loader, devices, batchdim, batches_per_execution, **kwargs)
                return
            notes[KEY + "ParallelLoader"] += 1
            self._cpu_loader = cpu_loader
            self._devices = devices
            self._batchdim = batchdim
            self._batches_per_execution = batches_per_execution
            self._input_sharding = kwargs.get("input_sharding")
            self._done = False
            self._exception_queue = queue.Queue()  # PerDeviceLoader looks here at the end
            self._threads, self._queues = [], {}
            self._batches = None

        def next_item(self, device):
            if self._queues:
                return super().next_item(device)
            if self._done:
                return None
            if self._batches is None:
                self._batches = iter(self._cpu_loader)
            try:
                batch = next(self._batches)
            except StopIteration:
                self._done = True
                return None
            with torch.no_grad():
                return self.send_cpu_data_to_device([batch], device)[0]

        def close(self):
            if self._queues:
                super().close()
            self._done = True

    parallel_loader.ParallelLoader = ParallelLoader
