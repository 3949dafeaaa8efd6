#!/usr/bin/env bash
# The main job on the bundled example project: preview the migration as a diff, apply it to a
# temporary copy (the project in fixtures/ is never modified), list what is left for a human,
# and prove on the CPU that the migrated training loop computes what the original computes.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" "xla"
cd "$ROOT"
PROJECT=fixtures/trainer_project/before

echo "== tpu-migrate diff $PROJECT"
status=0
tpu-migrate diff "$PROJECT" || status=$?
[ "$status" -le 1 ] || exit "$status" # 1 only means "there are changes"

WORK="$(mktemp -d)/trainer_project"
cp -r "$PROJECT" "$WORK"
echo
echo "== tpu-migrate apply $WORK   (a copy)"
tpu-migrate apply "$WORK"
echo
echo "== tpu-migrate check $WORK   (what is left for a human)"
tpu-migrate check "$WORK" || true
echo
echo "== a second apply changes nothing:"
tpu-migrate diff "$WORK" && echo "no changes"
echo
echo "== tpu-migrate verify: original on CPU vs migrated on XLA:CPU (PJRT_DEVICE=CPU)"
tpu-migrate verify "$PROJECT/train.py" --migrated "$WORK/train.py" -- --epochs 1
