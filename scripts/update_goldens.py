"""Regenerate fixtures/<name>/after/ from before/ with the current rules.

Run it after changing a rule, then read `git diff fixtures/` line by line: the golden files are
the reviewed, expected output, so every change in them must be one you would accept.

    .venv/bin/python scripts/update_goldens.py [NAME...]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fixtures.goldens import all_fixtures, migrate_copy  # noqa: E402


def main(names: list[str]) -> int:
    status = 0
    for fixture in all_fixtures():
        if names and fixture.name not in names:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / "work"
            results = migrate_copy(fixture.before, work)
            for result in results:
                if result.error:
                    print(f"{fixture.name}: {result.path.relative_to(work)}: {result.error}")
                    status = 1
                elif result.changed:
                    result.path.write_bytes(result.new_bytes())
            shutil.rmtree(fixture.after, ignore_errors=True)
            shutil.copytree(work, fixture.after)
        print(f"{fixture.name}: after/ regenerated")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
