"""Jupyter notebooks: migrated as one program, written back byte for byte, reported per cell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from migrate.cli import main
from migrate.notebook import Notebook
from migrate.source import SourceError

CUDA_CELLS = [
    "!pip install -q torchvision\n%matplotlib inline",
    "import torch\nimport torch.nn as nn\n\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'",
    "model = nn.Linear(4, 2).to(device)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
    "for step in range(3):\n"
    "    x = torch.randn(8, 4, device=device)\n"
    "    loss = model(x).sum()\n"
    "    optimizer.zero_grad()\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    if loss.item() < 0:\n"
    "        break",
]


def code_cell(source: str, number: int, outputs=()) -> dict:
    return {
        "cell_type": "code",
        "execution_count": number,
        "id": f"cell-{number}",
        "metadata": {"scrolled": True},
        "outputs": list(outputs),
        "source": source.splitlines(keepends=True),
    }


def notebook_bytes(cells: list[dict], **dump) -> bytes:
    data = {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    options = {"indent": 1, "sort_keys": True, "ensure_ascii": False, **dump}
    return (json.dumps(data, **options) + "\n").encode("utf-8")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def notebook(tmp_path):
    def make(cells: list[str], name: str = "train.ipynb", **dump) -> Path:
        outputs = [{"name": "stdout", "output_type": "stream", "text": ["déjà vu ✓\n"]}]
        raw = notebook_bytes(
            [
                {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Été\n"]},
                *(code_cell(src, i + 1, outputs) for i, src in enumerate(cells)),
            ],
            **dump,
        )
        path = tmp_path / name
        path.write_bytes(raw)
        return path

    return make


def cells_of(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def test_apply_rewrites_only_the_code_cells_sources(notebook, capsys):
    path = notebook(CUDA_CELLS)
    before = cells_of(path)
    code, out, _ = run(capsys, "apply", "-j", "1", str(path))
    assert code == 0, out
    after = cells_of(path)
    assert len(after) == len(before)
    for old, new in zip(before, after):
        assert {k: v for k, v in old.items() if k != "source"} == {
            k: v for k, v in new.items() if k != "source"
        }
    assert after[1]["source"] == before[1]["source"]  # magics untouched
    assert "".join(after[2]["source"]).count("import torch_xla\n") == 1  # imports: cell 3
    assert "device = torch_xla.device()" in "".join(after[2]["source"])
    assert "xm.optimizer_step(optimizer)" in "".join(after[4]["source"])
    written = path.read_bytes()
    assert written == notebook_bytes(after)  # same layout: indent 1, sorted keys, UTF-8, newline
    code, out, _ = run(capsys, "diff", "-j", "1", str(path))
    assert code == 0 and out == ""  # idempotent


def test_a_notebook_no_rule_changes_is_byte_identical(notebook, capsys):
    path = notebook(["import torch\nprint(torch.__version__)", "%time sum(range(10))"])
    raw = path.read_bytes()
    code, _, _ = run(capsys, "apply", "-j", "1", str(path))
    assert code == 0
    assert path.read_bytes() == raw


def test_the_json_keeps_its_own_layout(notebook, capsys):
    path = notebook(CUDA_CELLS, indent=2, ensure_ascii=True)
    run(capsys, "apply", "-j", "1", str(path))
    text = path.read_text(encoding="utf-8")
    assert '\n  "cells": [' in text and "\\u00e9" in text  # two spaces; non-ASCII escaped
    assert "device = torch_xla.device()" in text


def test_diff_is_per_cell_not_of_the_json(notebook, capsys):
    path = notebook(CUDA_CELLS)
    code, out, _ = run(capsys, "diff", "-j", "1", str(path))
    assert code == 1
    assert "--- a/" in out and ":cell 3\n" in out and ":cell 5\n" in out
    assert '"source"' not in out and "cell 2" not in out  # the magic cell did not change
    assert "+device = torch_xla.device()\n" in out


def test_check_names_cell_and_line(notebook, capsys):
    path = notebook(CUDA_CELLS)
    code, out, _ = run(capsys, "check", "-j", "1", str(path))
    assert code == 1
    assert "train.ipynb:cell 5:line 7: TPU241" in out
    code, out, _ = run(capsys, "check", "-j", "1", "--format", "json", str(path))
    (finding,) = json.loads(out)["files"][0]["findings"]
    assert (finding["code"], finding["cell"], finding["cell_line"]) == ("TPU241", 5, 7)
    code, out, _ = run(capsys, "check", "-j", "1", "--format", "sarif", str(path))
    results = json.loads(out)["runs"][0]["results"]
    (sarif,) = [r for r in results if r["ruleId"] == "TPU241"]
    physical = sarif["locations"][0]["physicalLocation"]
    assert physical["region"]["startLine"] == 7
    assert physical["properties"] == {"cell": 5, "lineInCell": 7}


def test_the_marker_lands_in_its_cell(notebook, capsys):
    path = notebook(CUDA_CELLS)
    run(capsys, "apply", "-j", "1", str(path))
    loop = "".join(cells_of(path)[4]["source"])
    assert "    # TODO(tpu-migrate): TPU241" in loop
    assert not loop.endswith("\n")  # the cell's last line still has no newline


def test_ipython_lines_are_never_parsed_and_stay(notebook, capsys):
    cells = [
        "import torch\nfiles = !ls\ntorch.cuda.synchronize?\n%load_ext autoreload",
        "%%bash\necho 'torch.cuda.synchronize()' > out.txt",
        "%%time\nfor i in range(2):\n    !echo {i}\n    torch.cuda.synchronize()",
    ]
    path = notebook(cells)
    code, _, err = run(capsys, "apply", "-j", "1", str(path))
    assert code == 0, err
    after = ["".join(c["source"]) for c in cells_of(path)[1:]]
    assert after[1] == cells[1]  # not Python: left out of the program
    magics = [line for line in after[0].splitlines() if not line.startswith("import")]
    assert magics == ["files = !ls", "torch.cuda.synchronize?", "%load_ext autoreload"]
    assert after[2].startswith("%%time\n") and "    !echo {i}\n" in after[2]
    assert "torch.cuda.synchronize()" not in after[2]  # the Python under %%time was migrated


def test_imports_go_into_a_new_first_cell_when_no_cell_imports_torch(notebook, capsys):
    guarded = "try:\n    import torch\nexcept ImportError:\n    torch = None"
    path = notebook([guarded, "if torch is not None:\n    torch.cuda.synchronize()"])
    run(capsys, "apply", "-j", "1", str(path))
    cells = cells_of(path)
    assert cells[0]["cell_type"] == "code" and cells[0]["id"] == "tpu-migrate-imports"
    assert "".join(cells[0]["source"]).startswith("import torch_xla")
    assert cells[0]["outputs"] == [] and cells[0]["execution_count"] is None
    assert list(cells[0]) == list(cells[2])  # keys in the order the other cells have them
    code, out, _ = run(capsys, "diff", "-j", "1", str(path))
    assert code == 0, out


def test_bad_notebooks_get_one_line_and_the_run_goes_on(tmp_path, notebook, capsys):
    good = notebook(CUDA_CELLS)
    (tmp_path / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    (tmp_path / "old.ipynb").write_text('{"cells": [], "nbformat": 3}', encoding="utf-8")
    code, out, err = run(capsys, "apply", "-j", "1", str(tmp_path))
    assert code == 2
    assert "broken.ipynb:1: notebook is not valid JSON" in err
    assert "old.ipynb:1: not an nbformat 4 notebook" in err
    assert "device = torch_xla.device()" in good.read_text(encoding="utf-8")


def test_a_directory_walk_finds_notebooks_but_not_checkpoints(tmp_path, notebook, capsys):
    notebook(CUDA_CELLS)
    checkpoints = tmp_path / ".ipynb_checkpoints"
    checkpoints.mkdir()
    (checkpoints / "train-checkpoint.ipynb").write_bytes((tmp_path / "train.ipynb").read_bytes())
    code, out, _ = run(capsys, "check", "-j", "1", "--format", "json", str(tmp_path))
    assert [Path(f["path"]).name for f in json.loads(out)["files"]] == ["train.ipynb"]
    code, out, _ = run(capsys, "check", "-j", "1", "--exclude", "*.ipynb", str(tmp_path))
    assert code == 0


def test_a_lost_cell_boundary_is_an_error_not_a_write():
    nb = Notebook.parse(
        notebook_bytes([code_cell("import torch\nx = 1", 1), code_cell("y = 2", 2)])
    )
    program = nb.program.replace("__tpu_migrate_cell__(1)\n", "")
    with pytest.raises(SourceError, match="cell boundary"):
        nb.render(program)
    assert nb.render(nb.program) == notebook_bytes(
        [code_cell("import torch\nx = 1", 1), code_cell("y = 2", 2)]
    )


def test_the_runnable_program_keeps_the_lines_of_the_program():
    nb = Notebook.parse(notebook_bytes([code_cell("!nvidia-smi\nimport torch", 1)]))
    runnable = nb.runnable()
    assert len(runnable.splitlines()) == len(nb.program.splitlines())
    assert "    " not in runnable.splitlines()[1] and "pass  # IPython: !nvidia-smi" in runnable
    assert nb.skipped() == ["cell 1, line 1: !nvidia-smi"]
    compile(runnable, "nb", "exec")


def test_an_import_a_cell_already_has_is_not_added_again(notebook, capsys):
    path = notebook(
        [
            "import torch\nfrom tqdm import tqdm\nimport torch_xla\n\ndevice = torch_xla.device()",
            "def train(model, loader, optimizer):\n"
            "    pbar = tqdm(loader)\n"
            "    for x, y in pbar:\n"
            "        loss = model(x).sum()\n"
            "        loss.backward()\n"
            "        optimizer.step()\n"
            "        pbar.set_postfix(loss=loss.item())",
        ]
    )
    run(capsys, "apply", "-j", "1", str(path))
    first = "".join(cells_of(path)[1]["source"])
    assert first.count("import torch_xla\n") == 1
    assert "import torch_xla.core.xla_model as xm\n" in first and "LOG_EVERY = 10" in first


def test_a_json_layout_that_cannot_be_written_back_exactly_is_not_rewritten(notebook, capsys):
    path = notebook(CUDA_CELLS)
    crlf = path.read_bytes().replace(b"\n", b"\r\n")
    path.write_bytes(crlf)
    code, _, err = run(capsys, "apply", "-j", "1", str(path))
    assert code == 2 and "train.ipynb: the notebook's JSON layout cannot be reproduced" in err
    assert path.read_bytes() == crlf
    code, out, _ = run(capsys, "check", "-j", "1", str(path))
    assert code == 2 and "cannot be reproduced" in out  # check says so before apply does
