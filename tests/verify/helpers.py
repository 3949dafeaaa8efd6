"""Paths shared by the verify tests."""

from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def script(name: str) -> str:
    """Absolute path of one of the small training scripts in scripts/."""
    return str(SCRIPTS / name)
