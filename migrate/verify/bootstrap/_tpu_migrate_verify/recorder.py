"""Counts training steps, keeps each step's loss, stops the run, writes this process's trace.

A step is an optimizer step (torch.optim's global step hook) or, in a process that has not stepped an
optimizer, a manual update: the tensors a backward() accumulated gradients into, changed in place
afterwards (``p.data.add_(p.grad, alpha=-lr)``, ``with torch.no_grad(): p -= lr * p.grad``,
``p.data = ...``). A manual update is complete at the first module call after that backward() (the
next forward), else when the next backward() starts or the process ends; several backward() before
one update (gradient accumulation) make one step.

Losses are kept as detached tensors where they live (on the XLA device on the migrated side) and
read only after the run, so recording adds no device->host transfer to the measured steps; finding
and watching the parameters reads host-side autograd metadata only.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys
import traceback
from collections import Counter

import torch

from . import startup
from .protocol import ORIGINAL, STOPPED, Config, params_file, trace_file
from .start_values import StartValues
from .stop import StopRun

# Attribute put on a GradScaler-scaled loss: the loss to record is the unscaled one.
_UNSCALED = "_tpu_migrate_verify_unscaled"

OPTIMIZER, MANUAL = "optimizer", "manual"  # the kinds of step (trace field "step_kind")

# the C getter/setter of Tensor.data (TensorBase was _TensorBase before torch 2.2)
_TENSOR_DATA = (getattr(torch._C, "TensorBase", None) or torch._C._TensorBase).__dict__["data"]


class Recorder:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.step = 0
        self.losses: list[tuple[torch.Tensor, ...] | None] = []
        self.optimizers: list[torch.optim.Optimizer] = []
        self.manual_params: list[torch.Tensor] = []  # what manual steps updated, first seen first
        self.kinds: set[str] = set()  # OPTIMIZER, MANUAL
        self.counters: list[dict | None] = []  # cumulative XLA metrics at each step
        self.notes: Counter = Counter()  # what the instrumentation changed, e.g. "dropout": 12
        self.xla = None  # an XlaProbe once torch_xla is imported (migrated side)
        self.stopped = False
        self.written = False
        self._last_loss: tuple[torch.Tensor, ...] | None = None
        self._watch: _Watch | None = _Watch()  # None once an optimizer stepped: no manual steps
        self._forward_check = None  # the global forward pre-hook armed by a backward()
        self._backward_depth = 0  # > 0 inside backward() (reentrant checkpointing nests them)
        # the compared original run only: did its steps change any parameter? (start_values.py)
        self.start_values = (
            StartValues() if config.side == ORIGINAL and not config.perturb else None
        )

    def install_hooks(self) -> None:
        from torch.optim.optimizer import (
            register_optimizer_step_post_hook,
            register_optimizer_step_pre_hook,
        )

        if self.start_values is not None:
            register_optimizer_step_pre_hook(self._before_optimizer_step)
        register_optimizer_step_post_hook(self._after_optimizer_step)
        torch.autograd.backward = self._wrap_backward(torch.autograd.backward)
        self._remember_unscaled_losses()

    def _wrap_backward(self, backward):
        @functools.wraps(backward)
        def recording_backward(tensors, *args, **kwargs):
            if not isinstance(tensors, (torch.Tensor, list, tuple)):
                tensors = tuple(tensors)  # a generator would be used up by the recording
            inputs = kwargs.get("inputs", args[4] if len(args) > 4 else None)
            if inputs is not None and not isinstance(inputs, (torch.Tensor, list, tuple)):
                inputs = tuple(inputs)
                if "inputs" in kwargs:
                    kwargs["inputs"] = inputs
                else:
                    args = (*args[:4], inputs, *args[5:])
            self._before_backward(tensors, inputs)
            self._note_loss(tensors)
            self._backward_depth += 1
            try:
                return backward(tensors, *args, **kwargs)
            finally:
                self._backward_depth -= 1
                if not self._backward_depth:
                    self._arm_forward_check()

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

    def _before_backward(self, tensors, inputs) -> None:
        """Completes the manual update that followed the previous backward, then watches this one's."""
        watch = self._watch
        if watch is None:
            return
        if self.stopped:
            raise StopRun()  # the script swallowed the first one; keep stopping it
        if not self._backward_depth:  # one inside a backward() belongs to that one's step
            self._end_manual_step(stop=True)
        if not watch.active:
            watch.activate()
            atexit.register(self._end_manual_step_at_exit)  # runs before agent's (registered first)
        seq = (tensors,) if isinstance(tensors, torch.Tensor) else tensors
        leaves = _grad_leaves([t for t in seq if isinstance(t, torch.Tensor)], inputs)
        if self.start_values is not None:
            self.start_values.remember(leaves)
        watch.add(leaves)

    def _arm_forward_check(self) -> None:
        if self._watch is not None and self._forward_check is None:
            from torch.nn.modules.module import register_module_forward_pre_hook

            self._forward_check = register_module_forward_pre_hook(self._before_forward)

    def _disarm_forward_check(self) -> None:
        if self._forward_check is not None:
            self._forward_check.remove()
            self._forward_check = None

    def _before_forward(self, module, args) -> None:
        """The first module call after a backward(): the update, if any, is done by now."""
        if self._backward_depth:
            return  # a checkpointed segment recomputing its forward inside backward()
        self._disarm_forward_check()  # module calls run at full speed until the next backward()
        if self.stopped:
            raise StopRun()
        self._end_manual_step(stop=True)

    def _end_manual_step(self, stop: bool) -> None:
        watch = self._watch
        if watch is None or not watch.active:
            return
        updated = watch.updated()
        if not updated:
            return  # e.g. gradient accumulation: another backward before the update
        watch.clear()
        known = {id(p) for p in self.manual_params}
        self.manual_params.extend(p for p in updated if id(p) not in known)
        self.kinds.add(MANUAL)
        self.count_step(updated)
        if stop:
            self._stop_at_limit()

    def _end_manual_step_at_exit(self) -> None:
        if not self.written and not self.stopped:
            self._end_manual_step(stop=False)

    def _before_optimizer_step(self, optimizer, args, kwargs) -> None:
        if not any(known is optimizer for known in self.optimizers):
            self.start_values.remember(
                p for group in optimizer.param_groups for p in group["params"]
            )

    def _after_optimizer_step(self, optimizer, args, kwargs) -> None:
        if self.stopped:
            raise StopRun()  # the script swallowed the first one; keep stopping it
        if self._watch is not None:  # from now on only optimizer steps count
            self._watch.deactivate()
            self._watch = None
            self._disarm_forward_check()
        if not any(known is optimizer for known in self.optimizers):
            self.optimizers.append(optimizer)
        self.kinds.add(OPTIMIZER)
        self.count_step([p for group in optimizer.param_groups for p in group["params"]])
        self._stop_at_limit()

    def count_step(self, params: list[torch.Tensor]) -> None:
        """Records one step (optimizer or manual) that has just updated `params`."""
        self.step += 1
        self.losses.append(self._last_loss)
        if self.xla is not None:
            self.counters.append(self.xla.counters())
        if self.config.perturb:  # the noise run (perturb.py)
            from . import perturb

            perturb.after_step(params)

    def _stop_at_limit(self) -> None:
        if self.step >= self.config.steps:
            self.stopped = True
            self.finish(STOPPED)
            raise StopRun()

    def finish(self, status: str, error: str | None = None) -> None:
        """Write the trace (JSON) and the final parameters (torch.save) of this process."""
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
            if not self.stopped and not self.written:
                self._end_manual_step(stop=False)  # the script's last update before it ended
            self.written = True
            trace["step_kind"] = self._step_kind()
            xla_ready = self.xla is not None and self.xla.ready()
            if xla_ready:
                trace["torch_xla_used"] = True
                trace["hygiene"] = {
                    "per_step": self.counters,
                    "fallback_ops": self.xla.fallback_ops(),
                    "optimizers": len(self.optimizers),  # steps per iteration, for warm-up
                }
                self.xla.sync()  # the last step's update is still pending in the lazy graph
            trace["rank"], trace["rank_source"] = self._rank(xla_ready)
            trace["steps"] = [
                {"step": i + 1, "loss": loss} for i, loss in enumerate(self._loss_values())
            ]
            params, devices = self._params()
            if self.start_values is not None:
                trace["params_moved"], trace["params_tracked"] = self.start_values.moved(
                    param for _, param in self._named_param_tensors()
                )
            torch.save(params, params_file(config.trace_dir, config.side, pid))
            trace["params_file"] = os.path.basename(params_file(config.trace_dir, config.side, pid))
            trace["param_count"] = len(params)
            trace["param_devices"] = sorted(devices)
            trail = sys.modules.get("_tpu_migrate_verify.device_trail")
            if trail is not None:
                trace.update(trail.summary())
        except Exception:
            self.written = True
            trace["status"] = "error"
            trace["error"] = (error + "\n" if error else "") + (
                "tpu-migrate verify could not read the results of the run:\n"
                + traceback.format_exc()
            )
            trace.setdefault("steps", [])
            trace.setdefault("step_kind", self._step_kind())
        path = trace_file(config.trace_dir, config.side, pid)
        with open(path + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(trace, handle)
        os.replace(path + ".tmp", path)

    def _step_kind(self) -> str | None:
        """OPTIMIZER or MANUAL (None: no step); "mixed": manual steps before the first optimizer step."""
        if len(self.kinds) > 1:
            return "mixed"
        return next(iter(self.kinds), None)

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
        for name, param in self._named_param_tensors():
            devices.add(param.device.type)
            params[name] = param.detach().to("cpu").clone()
        return params, devices

    def _named_param_tensors(self):
        for i, optimizer in enumerate(self.optimizers):
            for g, group in enumerate(optimizer.param_groups):
                for j, param in enumerate(group["params"]):
                    yield f"optimizer{i}.group{g}.param{j}", param
        for j, param in enumerate(self.manual_params):
            yield f"manual.param{j}", param

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


def _grad_leaves(roots: list[torch.Tensor], inputs) -> list[torch.Tensor]:
    """The leaf tensors a backward from `roots` accumulates gradients into, in the forward's order.

    A leaf is ordered by the first autograd node that consumes it (nodes are numbered as the forward
    creates them), then by its input position there: an order both runs share even where a backend
    builds a different graph between two parameters (the names of saved parameters depend on it).
    """
    if inputs is not None:  # backward(inputs=...) accumulates into these only
        seq = (inputs,) if isinstance(inputs, torch.Tensor) else inputs
        return [t for t in seq if isinstance(t, torch.Tensor) and t.requires_grad and t.is_leaf]
    found: dict[int, tuple[tuple[int, int], torch.Tensor]] = {}
    stack, seen = [], set()
    for position, root in enumerate(roots):
        if root.grad_fn is not None:
            stack.append(root.grad_fn)
        elif root.requires_grad:
            found.setdefault(id(root), ((-1, position), root))
    while stack:
        node = stack.pop()
        number = node._sequence_nr() if hasattr(node, "_sequence_nr") else 0
        for position, (child, _) in enumerate(node.next_functions):
            if child is None:
                continue
            leaf = getattr(child, "variable", None)  # an AccumulateGrad node
            if leaf is not None:
                key = (number, position)
                if id(leaf) not in found or key < found[id(leaf)][0]:
                    found[id(leaf)] = (key, leaf)
            elif child not in seen:
                seen.add(child)
                stack.append(child)
    return [leaf for _, leaf in sorted(found.values(), key=lambda entry: entry[0])]


class _Watch:
    """The leaves backward() filled since the last manual step, and whether any was updated in place.

    An in-place op on a tensor, or on a view or ``.detach()`` of it, moves its version counter.
    ``t.data`` is the exception: a new tensor with a version counter of its own, so while watching,
    ``Tensor.data`` is a property that keeps what it returned for a watched leaf (its version then
    tells) and notes ``t.data = ...``. Host-side metadata only, on the CPU and on XLA tensors.
    """

    def __init__(self) -> None:
        self.active = False
        self.leaves: list[torch.Tensor] = []
        self._index: dict[int, int] = {}  # id(leaf) -> position in leaves
        self._versions: list[int] = []  # each leaf's version when it was first watched
        self._views: list[tuple[int, torch.Tensor, int]] = []  # (leaf, its .data, that's version)
        self._replaced: set[int] = set()  # leaves given new data (t.data = ...)
        self._property: property | None = None

    def add(self, leaves: list[torch.Tensor]) -> None:
        for leaf in leaves:
            if id(leaf) not in self._index:
                self._index[id(leaf)] = len(self.leaves)
                self.leaves.append(leaf)
                self._versions.append(_version(leaf))

    def updated(self) -> list[torch.Tensor]:
        """The watched leaves changed since they were first watched, in the order they were found."""
        changed = set(self._replaced)
        changed.update(i for i, view, version in self._views if _version(view) != version)
        changed.update(
            i for i, leaf in enumerate(self.leaves) if _version(leaf) != self._versions[i]
        )
        self._views.clear()
        return [self.leaves[i] for i in sorted(changed)]

    def clear(self) -> None:
        self.leaves, self._index, self._versions = [], {}, []
        self._views.clear()
        self._replaced.clear()

    def _position(self, tensor: torch.Tensor) -> int | None:
        index = self._index.get(id(tensor))
        return index if index is not None and self.leaves[index] is tensor else None

    def activate(self) -> None:
        def get_data(tensor):
            view = _TENSOR_DATA.__get__(tensor, type(tensor))
            index = self._position(tensor)
            if index is not None and not (self._views and self._views[-1][1] is view):
                self._views.append((index, view, _version(view)))
            return view

        def set_data(tensor, value):
            _TENSOR_DATA.__set__(tensor, value)
            index = self._position(tensor)
            if index is not None:
                self._replaced.add(index)

        self._property = property(get_data, set_data, doc=_TENSOR_DATA.__doc__)
        torch.Tensor.data = self._property
        self.active = True

    def deactivate(self) -> None:
        if self._property is not None and torch.Tensor.__dict__.get("data") is self._property:
            del torch.Tensor.data
        self._property = None
        self.active = False
        self.clear()


def _version(tensor: torch.Tensor) -> int:
    try:
        return tensor._version
    except RuntimeError:  # e.g. an inference tensor: no version counter, never seen as updated
        return -1
