"""The measured outcome of the static-shape rules (real torch_xla on the CPU).

The full migration of each hygiene fixture compiles nothing after warm-up and still trains like
the original; the same migration without the hygiene rules recompiles: the rules are what fixes it.
"""

from __future__ import annotations

import shutil

import pytest

from migrate import cli
from tests.fixtures.goldens import all_fixtures

pytestmark = [pytest.mark.xla, pytest.mark.usefixtures("xla_available")]

# fixture -> the hygiene rules it needs
HYGIENE = {
    "partial_last_batch": "TPU113",
    "variable_length_text": "TPU113,TPU114",
    "token_stream_lm": "TPU121",
}
FIXTURES = {f.name: f for f in all_fixtures() if f.name in HYGIENE}


def _verify(verify_cli, fixture, *options):
    return verify_cli(
        str(fixture.before / fixture.run["script"]),
        "--cwd",
        str(fixture.before),
        "--root",
        str(fixture.before),
        *options,
        *fixture.verify_args,
        "--",
        *fixture.run.get("args", []),
    )


@pytest.mark.parametrize("name", sorted(HYGIENE))
def test_full_migration_compiles_nothing_after_warmup(verify_cli, name):
    fixture = FIXTURES[name]
    outcome = _verify(verify_cli, fixture)  # migrates a temporary copy with every rule
    assert outcome.code == 0, outcome.out + outcome.err
    result = outcome.result
    assert result["verdict"] == "equivalent"
    assert all(step["rel_diff"] <= 1e-5 for step in result["steps"])
    hygiene = result["hygiene"]
    assert hygiene["steady_steps"] > 0 and hygiene["compilations_after_warmup"] == 0
    if "TPU113" in HYGIENE[name]:
        assert any(
            n.startswith("the original run repeats what TPU113 changed") for n in result["notes"]
        )


@pytest.mark.parametrize("name", sorted(HYGIENE))
def test_naive_migration_recompiles(verify_cli, capsys, tmp_path, name):
    fixture = FIXTURES[name]
    naive = tmp_path / "naive"
    shutil.copytree(fixture.before, naive)
    assert cli.main(["apply", "--ignore", HYGIENE[name], "--jobs", "1", str(naive)]) == 0
    capsys.readouterr()
    outcome = _verify(verify_cli, fixture, "--migrated", str(naive / fixture.run["script"]))
    assert outcome.code == 0, outcome.out + outcome.err  # same numbers, just slow on a TPU
    hygiene = outcome.result["hygiene"]
    assert hygiene["steady_steps"] > 0 and hygiene["compilations_after_warmup"] > 0
    if "TPU113" in HYGIENE[name]:  # the rule with a verify adjustment says it is missing
        assert any("TPU113 would still edit" in note for note in outcome.result["notes"])
