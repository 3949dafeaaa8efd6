"""What the verifier and the instrumented processes agree on: the settings and the trace files.

This module is loaded both inside the instrumented processes (as part of the bootstrap, which must
not import tpu-migrate: the script may run under another interpreter) and by the verifier itself
(by file path), so it depends on the standard library only.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

# The settings travel in one environment variable, so every process the script starts inherits them.
CONFIG_ENV = "TPU_MIGRATE_VERIFY"

ORIGINAL, MIGRATED = "original", "migrated"

# How a process's run ended, as written in its trace.
STOPPED = "stopped"  # the requested number of optimizer steps was reached
FINISHED = "finished"  # the script ended on its own before that
EXITED = "exited"  # sys.exit with a non-zero status
ERROR = "error"  # an exception escaped the script


@dataclass(frozen=True)
class Config:
    side: str  # ORIGINAL or MIGRATED
    trace_dir: str
    steps: int
    seed: int
    keep_dropout: bool = False
    keep_autocast: bool = False
    map_cuda: bool = True  # original side only: run the CUDA code path on the CPU
    align_rng: bool = True  # migrated side only: draws on the XLA device from the CPU generator
    # original side only: behaviour changes the migration made on purpose, repeated here so the
    # runs stay comparable; {"code", "kind", "path", "line", "end_line"} (see align.py)
    adjustments: tuple = ()
    # the run's shadow tree (see sandbox.py): its folder, the user's folders it stands for, and
    # whether modules of those folders are imported from the shadow (the migrated copies)
    shadow: str = ""
    protected: tuple = ()
    remap_imports: bool = False
    # > 0 in the noise run (the original side again, in its own trace folder): its parameters are
    # nudged by this relative amount at each step (see perturb.py); 0 in the compared runs.
    # Each noise run draws its nudges from a generator of its own, chosen by its index.
    perturb: float = 0.0
    noise_index: int = 0

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls, environ=os.environ) -> "Config | None":
        text = environ.get(CONFIG_ENV)
        if not text:
            return None
        return cls(**json.loads(text))


def trace_file(trace_dir: str, side: str, pid: int) -> str:
    return os.path.join(trace_dir, f"trace-{side}-{pid}.json")


def params_file(trace_dir: str, side: str, pid: int) -> str:
    return os.path.join(trace_dir, f"params-{side}-{pid}.pt")


def imports_file(trace_dir: str, side: str, pid: int) -> str:
    return os.path.join(trace_dir, f"imports-{side}-{pid}.json")


def trace_files(trace_dir: str, side: str) -> list[str]:
    prefix = f"trace-{side}-"
    return sorted(
        os.path.join(trace_dir, name)
        for name in os.listdir(trace_dir)
        if name.startswith(prefix) and name.endswith(".json")
    )
