"""Entry point of a verified run: ``python -m _tpu_migrate_verify.run SCRIPT [ARGS...]``.

Runs SCRIPT as ``__main__`` the way ``python SCRIPT ARGS`` would (sys.argv, sys.path[0]), with the
instrumentation that sitecustomize activated, and makes sure this process leaves a trace even when
the script never reaches the step limit.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import traceback

from . import startup
from .protocol import ERROR, EXITED, FINISHED, STOPPED, imports_file, trace_file
from .stop import StopRun


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: python -m _tpu_migrate_verify.run SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    config = startup.CONFIG
    if config is None:
        print(
            "tpu-migrate verify: the instrumentation is not active in this process", file=sys.stderr
        )
        return 97
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    startup.ROOT_PID = os.getpid()
    status, error, code = FINISHED, None, 0
    try:
        runpy.run_path(script, run_name="__main__")
    except StopRun:
        status = STOPPED
    except SystemExit as exc:
        if exc.code not in (None, 0):
            status, code = EXITED, exc.code if isinstance(exc.code, int) else 1
            if not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
    except BaseException as exc:
        message = str(exc).strip().splitlines()
        summary = f"{type(exc).__name__}: {message[0]}" if message else type(exc).__name__
        status, error, code = ERROR, traceback.format_exc() + summary, 1
        traceback.print_exc()
    _write_root_trace(config, status, error)
    _write_imports(config)
    return code


def _write_imports(config) -> None:
    """The local modules the run imported from the user's files outside its shadow (sandbox.py)."""
    from . import sandbox

    if sandbox.SANDBOX is None:
        return
    with open(imports_file(config.trace_dir, config.side, os.getpid()), "w") as handle:
        json.dump(sandbox.SANDBOX.local_modules(), handle)


def _write_root_trace(config, status: str, error: str | None) -> None:
    agent = sys.modules.get("_tpu_migrate_verify.agent")
    recorder = agent.RECORDER if agent is not None else None
    if recorder is not None:
        if recorder.written:
            return
        recorder.finish(status, error)
        return
    trace = {  # torch was never imported: nothing trained in this process
        "side": config.side,
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "is_root": True,
        "status": status,
        "error": error,
        "requested_steps": config.steps,
        "torch_imported": False,
        "torch_xla_used": False,
        "steps": [],
        "hygiene": None,
        "notes": {},
        "rank": 0,
        "rank_source": "single process",
    }
    with open(
        trace_file(config.trace_dir, config.side, os.getpid()), "w", encoding="utf-8"
    ) as handle:
        json.dump(trace, handle)


if __name__ == "__main__":
    sys.exit(main())
