"""Runs that share the machine share its cores: each side's thread pools get their part."""

from __future__ import annotations

from pathlib import Path

from migrate.verify.runner import ORIGINAL, SideSpec, side_env, threads_per_side


def test_two_runs_at_once_split_the_cores():
    assert threads_per_side(2, cores=2) == 1
    assert threads_per_side(2, cores=16) == 8
    assert threads_per_side(1, cores=4) == 4
    assert threads_per_side(3, cores=2) == 1  # never none


def test_each_side_gets_its_threads_unless_the_user_set_them():
    spec = SideSpec(ORIGINAL, Path("train.py"), [], Path("."), "python", config=_Config())
    env = side_env(spec, base={}, threads=3)
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "3"
    mine = side_env(spec, base={"OMP_NUM_THREADS": "8"}, threads=3)
    assert mine["OMP_NUM_THREADS"] == "8"  # the user's own setting wins
    assert "OMP_NUM_THREADS" not in side_env(spec, base={})  # no limit asked: none set


class _Config:
    def to_env(self) -> str:
        return "{}"
