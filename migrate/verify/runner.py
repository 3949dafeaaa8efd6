"""Run one side of the comparison in its own instrumented process and collect what it recorded."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

BOOTSTRAP_DIR = Path(__file__).resolve().with_name("bootstrap")


def _load_protocol():
    """The bootstrap's protocol module, shared by file so that both ends read the same definitions."""
    path = BOOTSTRAP_DIR / "_tpu_migrate_verify" / "protocol.py"
    spec = importlib.util.spec_from_file_location("migrate.verify._protocol", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


protocol = _load_protocol()
ORIGINAL, MIGRATED = protocol.ORIGINAL, protocol.MIGRATED
STDERR_TAIL_LINES = 40


@dataclass
class SideSpec:
    side: str  # ORIGINAL or MIGRATED
    script: Path
    args: list[str]
    cwd: Path
    python: str
    config: object  # protocol.Config
    pythonpath: list[str] = field(
        default_factory=list
    )  # the user's PYTHONPATH entries, for this side
    label: str = ""  # how the report names the run (default: the side)
    essential: bool = True  # when it fails, the other runs are stopped

    @property
    def name(self) -> str:
        return self.label or self.side


@dataclass
class SideRun:
    spec: SideSpec
    returncode: int | None = None
    seconds: float = 0.0
    timed_out: bool = False
    cancelled: bool = False  # stopped because the other side had already failed
    stdout: str = ""
    stderr: str = ""
    traces: list[dict] = field(default_factory=list)
    imports: list[dict] = field(default_factory=list)  # local modules from outside the shadow
    failure: str | None = None  # why this run cannot be compared; None when it can

    @property
    def trace(self) -> dict | None:
        """The trace to compare: rank 0 among the processes that ran optimizer steps (most steps wins)."""
        stepped = [t for t in self.traces if t.get("steps")]
        if not stepped:
            return None
        rank0 = [t for t in stepped if t.get("rank", 0) == 0] or stepped
        return max(rank0, key=lambda t: (len(t["steps"]), t.get("is_root", False)))

    @property
    def root_trace(self) -> dict | None:
        return next((t for t in self.traces if t.get("is_root")), None)

    def params_path(self) -> Path | None:
        trace = self.trace
        if trace is None or not trace.get("params_file"):
            return None
        return Path(self.spec.config.trace_dir) / trace["params_file"]

    def stderr_tail(self, lines: int = STDERR_TAIL_LINES) -> str:
        return "\n".join(self.stderr.rstrip().splitlines()[-lines:])


# Thread pools torch's CPU kernels size from these (OpenMP, MKL); the user's own setting wins.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def threads_per_side(at_once: int, cores: int | None = None) -> int:
    """CPU threads for each of ``at_once`` runs sharing the machine. Two runs that each size
    their pools to every core oversubscribe it: measured on 2 cores, minGPT's original took
    37.9 s beside the migrated run instead of 5.2 s alone, and 6.6 s with one thread each."""
    return max(1, (cores or os.cpu_count() or 1) // max(at_once, 1))


# Accelerate and transformers pick XLA by themselves whenever torch_xla imports (USE_TORCH_XLA,
# default on), and torch_xla is installed beside torch for the migrated run: unset, the original
# run of an Accelerate script trains on XLA too, and verify compares XLA with XLA. The original runs
# plain torch, as on the GPU machine it was written for; the migrated run uses XLA, as on a TPU VM.
FRAMEWORKS_ON_TORCH = {"USE_TORCH_XLA": "0"}
FRAMEWORKS_ON_XLA = {"USE_TORCH_XLA": "1"}


def side_env(
    spec: SideSpec, base: dict[str, str] | None = None, threads: int | None = None
) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    if threads is not None:
        for variable in THREAD_VARIABLES:
            env.setdefault(variable, str(threads))
    env[protocol.CONFIG_ENV] = spec.config.to_env()
    env["PYTHONPATH"] = os.pathsep.join([str(BOOTSTRAP_DIR), *spec.pythonpath])
    env["CUDA_VISIBLE_DEVICES"] = (
        ""  # the original never uses a real GPU, even on a machine with one
    )
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no bytecode of the run in the user's folders
    if spec.side == ORIGINAL:
        # Distributed scripts are verified with world size 1.
        env.update(
            RANK="0",
            WORLD_SIZE="1",
            LOCAL_RANK="0",
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(free_port()),
        )
        env.update(FRAMEWORKS_ON_TORCH)
    else:
        env.update(PJRT_DEVICE="CPU", CPU_NUM_DEVICES="1", **FRAMEWORKS_ON_XLA)
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def command(spec: SideSpec) -> list[str]:
    return [spec.python, "-m", "_tpu_migrate_verify.run", str(spec.script), *spec.args]


class RunningSide:
    """A side's process, started in its own process group (ending it ends the children it started)."""

    def __init__(self, spec: SideSpec, timeout: float, threads: int | None = None) -> None:
        self.spec = spec
        self.timeout = timeout
        self.timed_out = False
        self.cancelled = False
        trace_dir = Path(spec.config.trace_dir)
        trace_dir.mkdir(parents=True, exist_ok=True)
        self._stdout = open(
            trace_dir / f"{spec.side}.stdout", "w+", encoding="utf-8", errors="replace"
        )
        self._stderr = open(
            trace_dir / f"{spec.side}.stderr", "w+", encoding="utf-8", errors="replace"
        )
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            command(spec),
            cwd=spec.cwd,
            env=side_env(spec, threads=threads),
            stdin=subprocess.DEVNULL,
            stdout=self._stdout,
            stderr=self._stderr,
            start_new_session=True,
        )
        self.seconds = 0.0

    def done(self) -> bool:
        """Polls; a run past its time limit is ended here."""
        if self.process.poll() is not None:
            return True
        if time.monotonic() - self.started > self.timeout:
            self.timed_out = True
            self._end()
            return True
        return False

    @property
    def failed(self) -> bool:
        return self.timed_out or self.process.returncode not in (0, None)

    def cancel(self) -> None:
        """The other side failed: this run's result is no longer needed."""
        self.cancelled = True
        self._end()

    def _end(self) -> None:
        self._kill_group()
        self.process.wait()

    def collect(self) -> SideRun:
        self._kill_group()  # processes the script left behind (e.g. stuck workers)
        run = SideRun(
            self.spec,
            returncode=self.process.returncode,
            timed_out=self.timed_out,
            cancelled=self.cancelled,
        )
        run.seconds = self.seconds
        run.stdout, run.stderr = self._read(self._stdout), self._read(self._stderr)
        run.traces = read_traces(self.spec.config.trace_dir, self.spec.side)
        run.imports = read_imports(self.spec.config.trace_dir, self.spec.side)
        run.failure = failure_of(run, self.timeout)
        return run

    def _kill_group(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    @staticmethod
    def _read(handle) -> str:
        handle.flush()
        handle.seek(0)
        text = handle.read()
        handle.close()
        return text


def read_traces(trace_dir: str, side: str) -> list[dict]:
    traces = []
    for path in protocol.trace_files(trace_dir, side):
        try:
            with open(path, encoding="utf-8") as handle:
                traces.append(json.load(handle))
        except (OSError, ValueError) as exc:
            traces.append(
                {"status": "error", "error": f"unreadable trace {path}: {exc}", "steps": []}
            )
    return traces


def read_imports(trace_dir: str, side: str) -> list[dict]:
    modules = []
    for path in Path(trace_dir).glob(f"imports-{side}-*.json"):
        try:
            modules += json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    return modules


def failure_of(run: SideRun, timeout: float) -> str | None:
    """Why a finished run cannot be compared (None: it can). Never hides a problem of the script."""
    if run.cancelled:
        return "stopped early: the other run had already failed"
    if run.timed_out:
        return f"timed out after {timeout:g} s"
    if run.returncode == 97 and not run.traces:
        return "the tpu-migrate instrumentation did not start in the process (see its stderr)"
    if run.returncode != 0:
        root = run.root_trace or {}
        last_line = (root.get("error") or "").strip().splitlines()[-1:]
        return f"exited with status {run.returncode}" + (f": {last_line[0]}" if last_line else "")
    broken = [t for t in run.traces if t.get("status") == protocol.ERROR]
    if broken:
        return (broken[0].get("error") or "a process of the run failed").strip().splitlines()[-1]
    if run.root_trace is None:
        return "the run left no trace (the instrumentation did not start)"
    if run.trace is None:
        if not run.root_trace.get("torch_imported"):
            return "the script never imported torch"
        return (
            "no training step was observed: neither an optimizer step (is optimizer.step() ever "
            "called?) nor an in-place update of the parameters after backward()"
        )
    return None  # a migrated run that stayed off XLA is a verdict of its own (session.not_on_xla)


def run_sides(
    specs: list[SideSpec], timeout: float, poll_seconds: float = 0.05, at_once: int = 2
) -> list[SideRun]:
    """Run the sides, one process each and ``at_once`` at a time, in the order given (a later one
    starts when an earlier one ends), each with its share of the CPU's threads. When an essential
    side fails, the others are stopped and the ones not started yet are not started."""
    waiting = list(specs)
    started: dict[int, RunningSide] = {}
    running: list[RunningSide] = []
    threads = threads_per_side(min(at_once, len(specs)))
    try:
        while waiting or running:
            while waiting and len(running) < at_once:
                spec = waiting.pop(0)
                side = RunningSide(spec, timeout, threads)
                started[id(spec)] = side
                running.append(side)
            for side in list(running):
                if not side.done():
                    continue
                side.seconds = time.monotonic() - side.started
                running.remove(side)
                if side.failed and side.spec.essential:
                    for other in running:
                        other.seconds = time.monotonic() - other.started
                        other.cancel()
                    running.clear()
                    waiting.clear()
                    break
            time.sleep(poll_seconds)
    except BaseException:
        for side in started.values():
            side.cancel()
        raise
    return [
        started[id(spec)].collect() if id(spec) in started else _never_started(spec)
        for spec in specs
    ]


def _never_started(spec: SideSpec) -> SideRun:
    return SideRun(spec, cancelled=True, failure="stopped early: the other run had already failed")
