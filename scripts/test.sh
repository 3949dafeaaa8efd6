#!/usr/bin/env bash
# Run the whole test suite (torch 2.9.0 + torch-xla 2.9.0 on the CPU included).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" "xla,dev"
cd "$ROOT"
exec python -m pytest "$@"
