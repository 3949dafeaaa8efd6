#!/usr/bin/env bash
# Run the whole test suite (torch 2.9.0 + torch-xla 2.9.0 on the CPU included).
#   --fast   everything but the real XLA runs and the slow tests (sweeps, both-ways comparisons,
#            training scripts run in subprocesses): the lane to run while iterating
# Further arguments go to pytest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" "xla,dev,frameworks"
cd "$ROOT"
if [[ "${1:-}" == "--fast" ]]; then
    shift
    exec python -m pytest -m "not xla and not slow" -n 2 "$@"
fi
exec python -m pytest "$@"
