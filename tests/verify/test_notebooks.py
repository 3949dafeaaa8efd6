"""verify on a notebook: its code cells run in order as one program, on the CPU and on XLA:CPU."""

from __future__ import annotations

import pytest

from tests.fixtures.goldens import all_fixtures

pytestmark = [pytest.mark.xla, pytest.mark.usefixtures("xla_available")]

NOTEBOOKS = {f.name: f for f in all_fixtures() if (f.before / "train.ipynb").is_file()}
LEFT_OUT = {
    "colab_classifier": ["!pip install -q tqdm", "!nvidia-smi", "%matplotlib inline"],
    "kaggle_timed_training": ["cell 4, line 1: %%time", "cell 2: a %%bash cell"],
}


def test_both_notebook_fixtures_are_checked():
    assert sorted(NOTEBOOKS) == sorted(LEFT_OUT)


@pytest.mark.parametrize("name", sorted(LEFT_OUT))
def test_a_migrated_notebook_is_equivalent(verify_cli, name):
    fixture = NOTEBOOKS[name]
    listing = sorted(p.name for p in fixture.before.iterdir())
    outcome = verify_cli(
        str(fixture.before / "train.ipynb"),
        "--cwd",
        str(fixture.before),
        "--root",
        str(fixture.before),
    )
    assert outcome.code == 0, outcome.out + outcome.err
    result = outcome.result
    assert result["verdict"] == "equivalent"
    assert result["hygiene"]["compilations_after_warmup"] == 0
    (note,) = [n for n in result["notes"] if n.startswith("notebook:")]
    assert all(magic in note for magic in LEFT_OUT[name]), note
    assert sorted(p.name for p in fixture.before.iterdir()) == listing  # nothing left behind


def test_a_given_migrated_notebook_is_run_as_given(verify_cli):
    fixture = NOTEBOOKS["colab_classifier"]
    outcome = verify_cli(
        str(fixture.before / "train.ipynb"),
        "--migrated",
        str(fixture.after / "train.ipynb"),
        "--cwd",
        str(fixture.before),
    )
    assert outcome.code == 0, outcome.out + outcome.err
    assert outcome.result["verdict"] == "equivalent"
    assert any("drop_last=True" in n and "cell 5:line 3" in n for n in outcome.result["notes"])
