# Sourced by the other scripts: create or refresh the project-local virtualenv in .venv.
# Usage: source scripts/_venv.sh [EXTRAS]   e.g. EXTRAS="xla,dev"
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PYTHON_BIN="${PYTHON:-$(command -v python3.11 || command -v python3)}"

# pip, with its output shown only when there is something to say (minus local-index noise),
# and its exit status kept.
quiet_pip() {
    local log status=0
    log="$(mktemp)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$@" >"$log" 2>&1 || status=$?
    grep -v "is ignored: it is neither a file nor a directory" "$log" >&2 || true
    rm -f "$log"
    return "$status"
}

if [ ! -x "$VENV/bin/python" ]; then
    echo "creating virtualenv in .venv ($("$PYTHON_BIN" --version))" >&2
    "$PYTHON_BIN" -m venv "$VENV"
fi
extras="${1:-}"
spec="$ROOT"
[ -n "$extras" ] && spec="$ROOT[$extras]"
echo "installing tpu-migrate${extras:+ [$extras]} into .venv (fast when already installed)" >&2
quiet_pip --upgrade pip
quiet_pip -e "$spec"
"$VENV/bin/python" -c "import migrate, codemods" # fail loudly if the install did not work
export PATH="$VENV/bin:$PATH"
