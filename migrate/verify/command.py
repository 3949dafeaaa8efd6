"""`tpu-migrate verify`: command-line wiring.

    tpu-migrate verify SCRIPT [options] [-- SCRIPT_ARGS...]

Exit codes: 0 equivalent, 1 not equivalent (or --strict hygiene failure), 2 a run failed, 3 usage error,
4 not on XLA (the migrated run's training executed no XLA graph), 5 inconclusive (the original run
changed no parameter and its loss never moved, or every bound is as large as its value).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

# Only what the parser needs: the CLI builds it for every command, `--help` included. The
# session (and, through it, the engine and the rules) is imported when `verify` runs.
from .compare import DIFFERENT, EQUIVALENT, FAILED, INCONCLUSIVE, NOISE_RUNS, NOT_ON_XLA

if TYPE_CHECKING:
    from .session import Options

EXIT_EQUIVALENT, EXIT_DIFFERENT, EXIT_FAILED, EXIT_USAGE = 0, 1, 2, 3
EXIT_NOT_ON_XLA, EXIT_INCONCLUSIVE = 4, 5
EXIT_CODES = {
    EQUIVALENT: EXIT_EQUIVALENT,
    DIFFERENT: EXIT_DIFFERENT,
    FAILED: EXIT_FAILED,
    NOT_ON_XLA: EXIT_NOT_ON_XLA,
    INCONCLUSIVE: EXIT_INCONCLUSIVE,
}

DESCRIPTION = (
    "Prove on the CPU that the migrated training loop computes what the original computes: run the "
    "original (plain torch, its CUDA path mapped to the CPU) and the migrated script (torch_xla on "
    "XLA:CPU) for a few optimizer steps, compare losses and final parameters, and measure how "
    "TPU-friendly the migrated loop is."
)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `verify` on the CLI's subparsers; the handler returns the exit code."""
    parser = subparsers.add_parser(
        "verify",
        help="Check that the migrated script trains like the original (real torch_xla on the CPU).",
        description=DESCRIPTION,
        usage="tpu-migrate verify SCRIPT [options] [-- SCRIPT_ARGS...]",
    )
    _add_options(parser)
    # Everything from SCRIPT on: argparse cannot mix options after a positional with a `--` that ends
    # them inside a subcommand, so the handler splits this list itself.
    parser.add_argument(
        "argv",
        nargs=argparse.REMAINDER,
        metavar="SCRIPT [-- SCRIPT_ARGS...]",
        help="the original training script, then its arguments after --",
    )
    parser.set_defaults(handler=run_command)
    return parser


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--steps", type=int, default=5, metavar="N", help="optimizer steps to run (default: 5)"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="S",
        help="seed for random, numpy, torch and the XLA RNG (default: 0)",
    )
    parser.add_argument(
        "--rtol",
        type=float,
        default=None,
        metavar="R",
        help="relative floor of every bound (default: 1e-5; 2e-2 with --keep-autocast)",
    )
    parser.add_argument(
        "--atol",
        type=float,
        default=None,
        metavar="A",
        help="absolute floor of every bound (default: 1e-6)",
    )
    parser.add_argument(
        "--fixed-tolerance",
        action="store_true",
        help="no noise run: judge by --rtol/--atol alone instead of bounds measured for the script",
    )
    parser.add_argument(
        "--noise-runs",
        type=int,
        default=NOISE_RUNS,
        metavar="N",
        help=f"noise runs that measure the bounds, each nudged its own way; the largest drift "
        f"counts (default: {NOISE_RUNS})",
    )
    parser.add_argument(
        "--migrated",
        type=Path,
        default=None,
        metavar="PATH",
        help="compare against this migrated script instead of migrating a temporary copy",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=None,
        metavar="DIR",
        help="the user's project root, shadowed and migrated (default: the git work tree, else the "
        "folder holding the script, the working directory and PYTHONPATH)",
    )
    parser.add_argument(
        "--cwd",
        type=Path,
        default=None,
        metavar="DIR",
        help="working directory of the runs (default: the current directory)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="SEC",
        help="time limit for each run (default: 300)",
    )
    parser.add_argument(
        "--json",
        default=None,
        metavar="OUT",
        help="also write the full result as JSON to OUT ('-': JSON on stdout instead of text)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail the verdict on a recompilation after warm-up or a mid-step host transfer",
    )
    parser.add_argument(
        "--keep-dropout",
        dest="keep_dropout",
        action="store_true",
        default=False,
        help="leave dropout on, its masks drawn from the CPU generator on both sides (attention "
        "and RNN-internal dropout stay off on both sides)",
    )
    parser.add_argument(
        "--no-dropout",
        dest="keep_dropout",
        action="store_false",
        help="switch every dropout off on both sides (the default)",
    )
    parser.add_argument(
        "--keep-autocast",
        action="store_true",
        help="leave autocast on and compare with a bf16 tolerance",
    )
    parser.add_argument(
        "--no-align-rng",
        action="store_true",
        help="let the migrated run draw device random numbers from the XLA RNG (by default they "
        "come from the CPU generator, as in the original)",
    )
    parser.add_argument(
        "--original-cpu-path",
        action="store_true",
        help="run the original untouched (no CUDA-to-CPU mapping): its CPU code path",
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        metavar="PATH",
        help="interpreter for both runs (default: the one running tpu-migrate)",
    )
    parser.add_argument(
        "--keep-temp",
        action="store_true",
        help="keep the temporary copy, traces and outputs of the runs",
    )


class _OptionsParser(argparse.ArgumentParser):
    def error(self, message):
        from .session import UsageError

        raise UsageError(message)


def parse(args: argparse.Namespace) -> Options:
    """Options from the parsed namespace plus the options written after SCRIPT."""
    from .session import Options, UsageError

    argv = list(args.argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        raise UsageError("verify needs the SCRIPT to run")
    script, rest = argv[0], argv[1:]
    if "--" in rest:
        cut = rest.index("--")
        options_after_script, script_args = rest[:cut], rest[cut + 1 :]
    else:
        options_after_script, script_args = rest, []
    if options_after_script:
        later = _OptionsParser(prog="tpu-migrate verify", add_help=False)
        _add_options(later)
        defaults = argparse.Namespace(**{k: v for k, v in vars(args).items() if k != "argv"})
        try:
            args = later.parse_args(options_after_script, namespace=defaults)
        except UsageError as exc:
            raise UsageError(f"{exc} (the script's own arguments go after --)") from None
    return Options(
        script=Path(script),
        script_args=script_args,
        steps=args.steps,
        seed=args.seed,
        rtol=args.rtol,
        atol=args.atol,
        migrated=args.migrated,
        root=args.root,
        cwd=args.cwd,
        timeout=args.timeout,
        keep_dropout=args.keep_dropout,
        keep_autocast=args.keep_autocast,
        align_rng=not args.no_align_rng,
        original_cpu_path=args.original_cpu_path,
        strict=args.strict,
        python=args.python,
        keep_temp=args.keep_temp,
        json_out=args.json,
        fixed_tolerance=args.fixed_tolerance,
        noise_runs=args.noise_runs,
    )


def run_command(args: argparse.Namespace) -> int:
    from . import render
    from .session import UsageError, verify

    try:
        options = parse(args)
        report = verify(options)
    except UsageError as exc:
        print(f"tpu-migrate verify: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # both runs and the temporary files are gone already
        print("tpu-migrate verify: interrupted", file=sys.stderr)
        return 130
    if options.json_out == "-":
        sys.stdout.write(render.json_text(report))
    else:
        sys.stdout.write(render.text(report))
        if options.json_out:
            try:
                Path(options.json_out).write_text(render.json_text(report), encoding="utf-8")
            except OSError as exc:
                print(
                    f"tpu-migrate verify: cannot write {options.json_out}: {exc.strerror}",
                    file=sys.stderr,
                )
                return EXIT_FAILED
    sys.stdout.flush()
    return EXIT_CODES[report.verdict.verdict]
