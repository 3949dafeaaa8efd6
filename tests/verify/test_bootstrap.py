"""The code injected into the verified processes, checked from inside such a process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from migrate.verify.runner import BOOTSTRAP_DIR, ORIGINAL, SideSpec, command, protocol, side_env

pytestmark = pytest.mark.slow  # runs torch training scripts in subprocesses

CUDA_CHECKS = textwrap.dedent("""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset

    checks = {}
    checks["cuda available"] = torch.cuda.is_available() and torch.cuda.device_count() == 1
    checks["accelerator"] = torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "cuda"
    device = torch.device("cuda:0")
    checks["device object stays cuda"] = device.type == "cuda"
    checks["factory"] = torch.zeros(2, device="cuda").device.type == "cpu"
    checks[".cuda()"] = torch.ones(1).cuda(non_blocking=True).device.type == "cpu"
    checks["device index"] = torch.ones(1).to(0).device.type == torch.zeros(1, device=0).device.type == "cpu"
    model = nn.Linear(3, 2).to(device)
    checks["module.to"] = next(model.parameters()).device.type == "cpu"
    checks["runtime calls"] = (torch.cuda.synchronize() is None and torch.cuda.memory_allocated() == 0
                               and torch.cuda.empty_cache() is None)
    loader = DataLoader(TensorDataset(torch.ones(4, 3)), batch_size=2, pin_memory=True)
    checks["no pinning"] = not loader.pin_memory and torch.ones(1).pin_memory().device.type == "cpu"
    x = torch.ones(64)
    checks["dropout off"] = torch.equal(F.dropout(x, 0.5, training=True), x)
    checks["dropout module off"] = torch.equal(nn.Dropout(0.9).train()(x), x)
    q = torch.randn(1, 2, 4, 8)
    checks["sdpa dropout off"] = torch.equal(F.scaled_dot_product_attention(q, q, q, dropout_p=0.9),
                                             F.scaled_dot_product_attention(q, q, q))
    with torch.autocast("cuda", dtype=torch.float16):
        checks["autocast off"] = (model(torch.ones(1, 3, device=device)).dtype == torch.float32)
    print(json.dumps(checks))
    """)


def _run_original(
    tmp_path: Path,
    code: str,
    map_cuda: bool = True,
    keep_autocast: bool = False,
    adjustments: tuple = (),
) -> subprocess.CompletedProcess:
    script = tmp_path / "checks.py"
    script.write_text("import json\n" + code)
    config = protocol.Config(
        side=ORIGINAL,
        trace_dir=str(tmp_path / "traces"),
        steps=5,
        seed=0,
        map_cuda=map_cuda,
        keep_autocast=keep_autocast,
        adjustments=adjustments,
    )
    spec = SideSpec(ORIGINAL, script, [], tmp_path, sys.executable, config)
    (tmp_path / "traces").mkdir()
    return subprocess.run(
        command(spec), cwd=tmp_path, env=side_env(spec), capture_output=True, text=True, timeout=300
    )


def test_original_side_runs_the_cuda_path_on_the_cpu(tmp_path):
    pytest.importorskip("torch")
    proc = _run_original(tmp_path, CUDA_CHECKS)
    assert proc.returncode == 0, proc.stderr
    checks = json.loads(proc.stdout.strip().splitlines()[-1])
    assert checks == {name: True for name in checks}, checks
    trace = json.loads(next((tmp_path / "traces").glob("trace-original-*.json")).read_text())
    assert trace["is_root"] and trace["status"] == "finished" and trace["steps"] == []
    assert trace["notes"]["dropout"] == 3 and trace["notes"]["autocast"] == 1


def test_original_cpu_path_has_no_cuda(tmp_path):
    pytest.importorskip("torch")
    proc = _run_original(
        tmp_path, "import torch\nprint(json.dumps(torch.cuda.is_available()))", map_cuda=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "false"


def test_bootstrap_is_inert_without_its_variable_and_chains_a_shadowed_sitecustomize(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text(
        "import builtins\nbuiltins.OTHER_SITECUSTOMIZE_RAN = True\n"
    )
    code = (
        "import builtins, sys; print(getattr(builtins, 'OTHER_SITECUSTOMIZE_RAN', False), "
        "'_tpu_migrate_verify.startup' in sys.modules, 'torch' in sys.modules)"
    )
    base = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{BOOTSTRAP_DIR}:{other}"}
    inert = subprocess.run([sys.executable, "-c", code], env=base, capture_output=True, text=True)
    config = protocol.Config(side=ORIGINAL, trace_dir=str(tmp_path), steps=1, seed=0)
    active = subprocess.run(
        [sys.executable, "-c", code],
        env={**base, protocol.CONFIG_ENV: config.to_env()},
        capture_output=True,
        text=True,
    )
    assert inert.stdout.split() == ["True", "False", "False"], inert.stderr
    # Active, but torch is only instrumented once the script imports it.
    assert active.stdout.split() == ["True", "True", "False"], active.stderr


def test_a_script_that_ends_early_reports_its_steps_and_exit_status(tmp_path):
    pytest.importorskip("torch")
    code = textwrap.dedent("""
        import sys, torch
        w = torch.nn.Parameter(torch.ones(2))
        opt = torch.optim.SGD([w], lr=0.5)
        for _ in range(2):
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()
        sys.exit(4)
        """)
    proc = _run_original(tmp_path, code)
    assert proc.returncode == 4
    trace = json.loads(next((tmp_path / "traces").glob("trace-original-*.json")).read_text())
    assert trace["status"] == "exited" and [s["loss"] for s in trace["steps"]] == [2.0, 0.0]


@pytest.mark.parametrize(
    "update, moved",
    [
        ("opt.step()", 1),
        ("opt.step()  # zero gradients", 0),
        ("w.data.add_(w.grad, alpha=-0.5)", 1),
        ("w.data.add_(w.grad, alpha=-0.5)  # zero gradients", 0),
    ],
    ids=["optimizer", "optimizer-frozen", "manual", "manual-frozen"],
)
def test_the_original_run_counts_the_parameters_its_steps_moved(tmp_path, update, moved):
    pytest.importorskip("torch")
    loss = "(w * 0).sum()" if "zero gradients" in update else "(w * w).sum()"
    code = textwrap.dedent(f"""
        import torch
        w = torch.nn.Parameter(torch.ones(2))
        frozen = torch.nn.Parameter(torch.ones(3))  # stepped by nothing: no gradient
        opt = torch.optim.SGD([w, frozen], lr=0.5)
        for _ in range(3):
            opt.zero_grad()
            {loss}.backward()
            {update}
        """)
    proc = _run_original(tmp_path, code)
    assert proc.returncode == 0, proc.stderr
    trace = json.loads(next((tmp_path / "traces").glob("trace-original-*.json")).read_text())
    tracked = 2 if update.startswith("opt") else 1
    assert (trace["params_moved"], trace["params_tracked"]) == (moved, tracked)


def test_grad_scaler_losses_are_recorded_unscaled_and_kept_autocast_runs_bf16_on_the_cpu(tmp_path):
    pytest.importorskip("torch")
    code = textwrap.dedent("""
        import torch
        w = torch.nn.Parameter(torch.ones(2, device="cuda"))
        opt = torch.optim.SGD([w], lr=0.25)
        scaler = torch.amp.GradScaler("cuda")
        for _ in range(2):
            opt.zero_grad()
            with torch.autocast("cuda"):
                dtype = (torch.ones(2, 2) @ torch.ones(2, 2)).dtype
            scaler.scale((w * w).sum()).backward()
            scaler.step(opt)
            scaler.update()
        print(json.dumps(str(dtype)))
        """)
    proc = _run_original(tmp_path, code, keep_autocast=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == '"torch.bfloat16"'
    trace = json.loads(next((tmp_path / "traces").glob("trace-original-*.json")).read_text())
    assert [s["loss"] for s in trace["steps"]] == [2.0, 0.5]  # not 2.0 * 65536


DROP_LAST_CHECKS = textwrap.dedent("""
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler

    data = TensorDataset(torch.arange(10.0))
    sampler = DistributedSampler(data, num_replicas=3, rank=0, shuffle=False)
    train_loader = DataLoader(
        data, batch_size=2, sampler=sampler
    )
    eval_loader = DataLoader(data, batch_size=4)
    kept = DataLoader(data, batch_size=4, drop_last=False)
    print(json.dumps([sampler.drop_last, train_loader.drop_last, eval_loader.drop_last,
                      kept.drop_last, len(train_loader)]))
    """)


def test_original_side_drops_the_last_batch_only_where_the_migration_did(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "checks.py"
    # checks.py is "import json" + a blank line + DROP_LAST_CHECKS: the sampler is on line 8,
    # the training loader on lines 9-11, the loader passing drop_last=False on line 13
    adjustments = tuple(
        {"code": "TPU113", "kind": "drop_last", "path": str(script), "line": a, "end_line": b}
        for a, b in [(8, 8), (9, 11), (13, 13)]
    )
    proc = _run_original(tmp_path, DROP_LAST_CHECKS, adjustments=adjustments)
    assert proc.returncode == 0, proc.stderr
    # 10 samples over 3 replicas: 3 per replica without the tail, so one batch of 2; the eval
    # loader (line 12) is not listed, and the loader's own drop_last=False wins
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [True, True, False, False, 1]
    trace = json.loads(next((tmp_path / "traces").glob("trace-original-*.json")).read_text())
    assert trace["notes"]["drop_last:DataLoader"] == 1
    assert trace["notes"]["drop_last:DistributedSampler"] == 1
