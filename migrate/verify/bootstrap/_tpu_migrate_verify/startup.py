"""Process start-up (from sitecustomize): seed, and arrange for the rest to happen when torch loads.

Nothing here imports torch: the instrumentation is installed right after the script itself imports
torch (or torch_xla), so environment variables the script sets before those imports still work and
Python processes that never use torch pay nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import multiprocessing.process
import os
import random
import sys
import threading

from .frameworks import LIGHTNING_ACCELERATOR_CONNECTOR_MODULES, LIGHTNING_XLA_PRECISION_MODULES
from .protocol import MIGRATED, ORIGINAL, Config
from .stop import StopRun

CONFIG: Config | None = None
ROOT_PID: int | None = None  # the process the verifier started (set by the runner)


def activate() -> None:
    global CONFIG
    config = Config.from_env()
    if config is None or CONFIG is not None:
        return
    if config.side not in (ORIGINAL, MIGRATED):
        raise ValueError(f"unknown verify side {config.side!r}")
    CONFIG = config
    if config.shadow:
        from . import sandbox

        sandbox.install(config.shadow, config.protected, config.remap_imports)
    random.seed(config.seed)
    _AFTER_IMPORT.register("numpy", _seed_numpy)
    _AFTER_IMPORT.register("torch", _on_torch)
    if config.side == MIGRATED:
        _AFTER_IMPORT.register("torch_xla", _on_torch_xla)
        _AFTER_IMPORT.register("torch_xla.distributed.parallel_loader", _on_parallel_loader)
        for name in LIGHTNING_XLA_PRECISION_MODULES:
            _AFTER_IMPORT.register(name, _on_lightning_xla_precision)
    else:
        _AFTER_IMPORT.register("accelerate", _on_accelerate)
        _AFTER_IMPORT.register("accelerate.data_loader", _on_accelerate_data_loader)
        for name in LIGHTNING_ACCELERATOR_CONNECTOR_MODULES:
            _AFTER_IMPORT.register(name, _on_lightning_accelerator_connector)
    sys.meta_path.insert(0, _AFTER_IMPORT)
    _stop_quietly_in_children()


def _seed_numpy(numpy) -> None:
    numpy.random.seed(CONFIG.seed)


def _on_torch(torch) -> None:
    from . import agent

    agent.install(CONFIG)


def _on_torch_xla(torch_xla) -> None:
    from . import agent

    agent.install_xla(CONFIG)


def _on_parallel_loader(parallel_loader) -> None:
    from . import agent

    agent.install_inline_loader(parallel_loader)


def _on_accelerate(accelerate) -> None:
    from . import agent, frameworks

    agent.notes(CONFIG)[frameworks.ACCELERATE] += 1


def _on_accelerate_data_loader(data_loader) -> None:
    from . import agent, frameworks

    frameworks.shuffle_as_on_xla(data_loader, agent.notes(CONFIG))


def _on_lightning_accelerator_connector(connector_module) -> None:
    from . import agent, frameworks

    frameworks.lightning_one_device_strategy(connector_module, agent.notes(CONFIG))


def _on_lightning_xla_precision(precision_module) -> None:
    from . import agent, frameworks

    frameworks.lightning_full_precision(precision_module, CONFIG, agent.notes(CONFIG))


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls a function with a module right after the module's own code has run (a post-import hook).

    A spec found is not a module imported: ``importlib.util.find_spec("torch_xla")`` only asks
    whether the package is there (Lightning's ``RequirementCache`` does, before it imports
    torch_xla), so a callback is given up only when a module's code has actually run.
    """

    def __init__(self) -> None:
        self._callbacks: dict[str, object] = {}
        self._resolving: set[str] = set()

    def register(self, name: str, callback) -> None:
        module = sys.modules.get(name)
        if module is not None:
            callback(module)
        else:
            self._callbacks[name] = callback

    def find_spec(self, fullname, path, target=None):
        if fullname not in self._callbacks or fullname in self._resolving:
            return None
        self._resolving.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._resolving.discard(fullname)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run_module_code = loader.exec_module
        if not _can_set_attribute(loader, "exec_module"):
            print(
                f"tpu-migrate verify: cannot instrument {fullname} (loaded by {type(loader).__name__})",
                file=sys.stderr,
                flush=True,
            )
            return spec

        def exec_module(module):
            try:
                run_module_code(module)
            finally:
                del loader.exec_module  # the loader object is this module's own: restore it
            callback = self._callbacks.pop(fullname, None)
            if callback is None:  # already called, for another spec of the same name
                return
            try:
                callback(module)
            except Exception as exc:
                print(
                    f"tpu-migrate verify: instrumentation failed: {exc!r}",
                    file=sys.stderr,
                    flush=True,
                )
                raise

        loader.exec_module = exec_module
        return spec


def _can_set_attribute(obj, name: str) -> bool:
    try:
        setattr(obj, name, getattr(obj, name))
    except (AttributeError, TypeError):
        return False
    delattr(obj, name)
    return True


_AFTER_IMPORT = _AfterImport()


def _stop_quietly_in_children() -> None:
    """A process the script started ends cleanly, not with a traceback, once it reached the step limit.

    The trace is already written when StopRun is raised; here it only has to stop the process without
    looking like a failure to whoever waits for it (torch.multiprocessing.spawn checks exit codes).
    """
    original_run = multiprocessing.process.BaseProcess.run

    def run(self):
        try:
            original_run(self)
        except StopRun:
            pass
        else:
            # A forked child leaves through os._exit, without atexit: report its steps now.
            agent = sys.modules.get("_tpu_migrate_verify.agent")
            if agent is not None:
                agent.write_if_it_trained()

    multiprocessing.process.BaseProcess.run = run

    previous_hook = sys.excepthook

    def excepthook(kind, value, traceback):
        if issubclass(
            kind, StopRun
        ):  # e.g. a torchrun-style child: `python train.py` under our env
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            os._exit(0)
        previous_hook(kind, value, traceback)

    sys.excepthook = excepthook

    previous_thread_hook = threading.excepthook

    def thread_excepthook(args):
        if not issubclass(args.exc_type, StopRun):
            previous_thread_hook(args)

    threading.excepthook = thread_excepthook
