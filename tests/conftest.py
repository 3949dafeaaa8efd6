from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

OLD_API = textwrap.dedent("""\
    import torch
    import torch_xla.core.xla_model as xm

    device = xm.xla_device()
    xm.mark_step()
    """)
NEW_API = textwrap.dedent("""\
    import torch
    import torch_xla

    device = torch_xla.device()
    torch_xla.sync()
    """)


@pytest.fixture
def project(tmp_path: Path):
    """A factory writing files under a fresh directory: project({"a.py": "..."}) -> root."""

    def make(files: dict[str, str | bytes]) -> Path:
        for name, content in files.items():
            path = tmp_path / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
        return tmp_path

    return make


@pytest.fixture(autouse=True)
def _private_result_cache(tmp_path_factory, monkeypatch):
    """CLI runs in tests never read or leave a .tpu-migrate-cache/ in the working directory."""
    monkeypatch.setenv("TPU_MIGRATE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
