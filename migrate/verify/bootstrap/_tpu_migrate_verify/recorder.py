"""Counts optimizer steps, keeps each step's loss, stops the run, writes this process's trace.

Losses are kept as detached tensors where they live (on the XLA device on the migrated side) and
read only after the run, so recording adds no device->host transfer to the measured steps.
"""

from __future__ import annotations

import functools
import json
import os
import traceback
from collections import Counter

import torch

from . import startup
from .protocol import STOPPED, Config, params_file, trace_file
from .stop import StopRun

# Attribute put on a GradScaler-scaled loss: the loss to record is the unscaled one.
_UNSCALED = "_tpu_migrate_verify_unscaled"


class Recorder:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.step = 0
        self.losses: list[tuple[torch.Tensor, ...] | None] = []
        self.optimizers: list[torch.optim.Optimizer] = []
        self.counters: list[dict | None] = []  # cumulative XLA metrics at each step hook
        self.notes: Counter = Counter()  # what the instrumentation changed, e.g. "dropout": 12
        self.xla = None  # an XlaProbe once torch_xla is imported (migrated side)
        self.stopped = False
        self.written = False
        self._last_loss: tuple[torch.Tensor, ...] | None = None

    def install_hooks(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        register_optimizer_step_post_hook(self._after_optimizer_step)
        torch.autograd.backward = self._wrap_backward(torch.autograd.backward)
        self._remember_unscaled_losses()

    def _wrap_backward(self, backward):
        @functools.wraps(backward)
        def recording_backward(tensors, *args, **kwargs):
            if not isinstance(tensors, (torch.Tensor, list, tuple)):
                tensors = tuple(tensors)  # a generator would be used up by the recording
            self._note_loss(tensors)
            return backward(tensors, *args, **kwargs)

        return recording_backward

    def _note_loss(self, tensors) -> None:
        seq = (tensors,) if isinstance(tensors, torch.Tensor) else tensors
        self._last_loss = tuple(
            getattr(t, _UNSCALED, t).detach() for t in seq if isinstance(t, torch.Tensor)
        )

    def _remember_unscaled_losses(self) -> None:
        try:
            from torch.amp.grad_scaler import GradScaler
        except ImportError:
            return
        scale = GradScaler.scale

        @functools.wraps(scale)
        def remembering_scale(scaler, outputs):
            scaled = scale(scaler, outputs)
            if isinstance(outputs, torch.Tensor) and scaled is not outputs:
                setattr(scaled, _UNSCALED, outputs.detach())
            return scaled

        GradScaler.scale = remembering_scale

    def _after_optimizer_step(self, optimizer, args, kwargs) -> None:
        if self.stopped:
            raise StopRun()  # the script swallowed the first one; keep stopping it
        if not any(known is optimizer for known in self.optimizers):
            self.optimizers.append(optimizer)
        self.step += 1
        self.losses.append(self._last_loss)
        if self.xla is not None:
            self.counters.append(self.xla.counters())
        if self.step >= self.config.steps:
            self.stopped = True
            self.finish(STOPPED)
            raise StopRun()

    def finish(self, status: str, error: str | None = None) -> None:
        """Write the trace (JSON) and the final parameters (torch.save) of this process."""
        self.written = True
        config = self.config
        pid = os.getpid()
        trace = {
            "side": config.side,
            "pid": pid,
            "ppid": os.getppid(),
            "is_root": pid == startup.ROOT_PID,
            "status": status,
            "error": error,
            "requested_steps": config.steps,
            "torch_imported": True,
            "torch_xla_used": False,
            "hygiene": None,
            "notes": dict(self.notes),
        }
        try:
            xla_ready = self.xla is not None and self.xla.ready()
            if xla_ready:
                trace["torch_xla_used"] = True
                trace["hygiene"] = {
                    "per_step": self.counters,
                    "fallback_ops": self.xla.fallback_ops(),
                }
                self.xla.sync()  # the last step's update is still pending in the lazy graph
            trace["rank"], trace["rank_source"] = self._rank(xla_ready)
            trace["steps"] = [
                {"step": i + 1, "loss": loss} for i, loss in enumerate(self._loss_values())
            ]
            params, devices = self._params()
            torch.save(params, params_file(config.trace_dir, config.side, pid))
            trace["params_file"] = os.path.basename(params_file(config.trace_dir, config.side, pid))
            trace["param_count"] = len(params)
            trace["param_devices"] = sorted(devices)
        except Exception:
            trace["status"] = "error"
            trace["error"] = (error + "\n" if error else "") + (
                "tpu-migrate verify could not read the results of the run:\n"
                + traceback.format_exc()
            )
            trace.setdefault("steps", [])
        path = trace_file(config.trace_dir, config.side, pid)
        with open(path + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(trace, handle)
        os.replace(path + ".tmp", path)

    def _loss_values(self) -> list[float | None]:
        values = []
        for loss in self.losses:
            if not loss:
                values.append(None)
                continue
            values.append(sum(float(t.to("cpu").float().sum()) for t in loss))
        return values

    def _params(self) -> tuple[dict[str, torch.Tensor], set[str]]:
        params, devices = {}, set()
        for i, optimizer in enumerate(self.optimizers):
            for g, group in enumerate(optimizer.param_groups):
                for j, param in enumerate(group["params"]):
                    devices.add(param.device.type)
                    params[f"optimizer{i}.group{g}.param{j}"] = param.detach().to("cpu").clone()
        return params, devices

    def _rank(self, xla_ready: bool) -> tuple[int, str]:
        if xla_ready:
            return self.xla.global_ordinal(), "torch_xla"
        try:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                return dist.get_rank(), "torch.distributed"
        except Exception:
            pass
        for name in ("RANK", "LOCAL_RANK"):
            if os.environ.get(name, "").isdigit():
                return int(os.environ[name]), name
        return 0, "single process"
