#!/usr/bin/env bash
# The main job on the bundled example project: preview the migration as a diff, then apply it
# to a temporary copy (the project in fixtures/ is never modified) and show the result.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
cd "$ROOT"
PROJECT=fixtures/trainer_project/before
echo "== tpu-migrate diff $PROJECT"
set +e
tpu-migrate diff "$PROJECT"
status=$?
set -e
[ "$status" -le 1 ] || exit "$status" # 1 only means "there are changes"
WORK="$(mktemp -d)"
cp -r "$PROJECT/." "$WORK/"
echo
echo "== tpu-migrate apply (on a copy in $WORK)"
tpu-migrate apply "$WORK"
echo
echo "== tpu-migrate check (what is left for a human)"
tpu-migrate check "$WORK" || true
echo
echo "== second apply changes nothing (idempotent):"
tpu-migrate diff "$WORK" && echo "no changes"
echo "migrated copy: $WORK"
