"""tpu-migrate verify bootstrap: this directory is put first on PYTHONPATH of the verified runs.

Python imports ``sitecustomize`` in every process it starts, so the instrumentation reaches the
processes a script starts itself (torch_xla.launch, mp.spawn, DataLoader workers) — the way
coverage.py measures subprocesses. It does nothing unless TPU_MIGRATE_VERIFY is set, and then runs
the ``sitecustomize`` this one shadows, if there is one.
"""

import os
import sys


def _activate() -> None:
    if os.environ.get("TPU_MIGRATE_VERIFY"):
        from _tpu_migrate_verify import startup

        startup.activate()


def _chain_shadowed_sitecustomize() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_activate()
_chain_shadowed_sitecustomize()
