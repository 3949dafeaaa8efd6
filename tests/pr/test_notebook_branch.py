"""`apply --branch` commits notebooks like other files: one commit per rule, the JSON kept."""

from __future__ import annotations

from pathlib import Path

from tests.pr.conftest import git

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_a_notebook_gets_one_commit_per_rule_and_ends_as_apply_writes_it(make_repo, tpu_migrate):
    repo = make_repo(FIXTURES / "colab_classifier" / "before")
    outcome = tpu_migrate(repo, "apply", ".", "--branch", "tpu/notebook")
    assert outcome.code == 0, outcome.err
    subjects = git(repo, "log", "--reverse", "--format=%s", "main..tpu/notebook").splitlines()
    assert subjects and all(s.endswith(": 1 file") for s in subjects)
    assert subjects[0].startswith("TPU101 ")
    final = (repo / "train.ipynb").read_bytes()
    assert final == (FIXTURES / "colab_classifier" / "after" / "train.ipynb").read_bytes()
    for sha in git(repo, "log", "--format=%H", "main..tpu/notebook").split():
        shown = git(repo, "show", f"{sha}:train.ipynb")
        assert shown.startswith('{\n "cells": [') and shown.endswith("}\n")  # Jupyter's layout
