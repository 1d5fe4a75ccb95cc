"""On a CUDA machine: self_vs_total's device columns must reproduce torch's key_averages()
for a training step (forward, backward on autograd's device thread, optimizer, copies).

Run with ``pytest -m gpu tests/gpu/test_ops_cuda.py``; CI has no GPU and skips it.
Tolerance as in test_ops_torch_cpu.py (1 ns per op: both sides read the same ns clock).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import autoprof
from autoprof.analysis.metrics.ops import self_vs_total
from autoprof.analysis.report.tables import format_table

torch = pytest.importorskip("torch")
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402

pytestmark = pytest.mark.gpu
TOL_US = 0.001


def _train(path: Path) -> Any:
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    ).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x_cpu = torch.randn(64, 256)

    def step() -> None:
        with record_function("train_step"):
            x = x_cpu.to("cuda")  # memcpy HtoD
            loss = model(x).logsumexp(dim=1).mean()
            opt.zero_grad(set_to_none=False)  # memset / fill kernels
            loss.backward()
            opt.step()
            loss.item()  # memcpy DtoH, a host sync

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 record_shapes=True, with_flops=True) as prof:
        for _ in range(3):
            step()
        torch.cuda.synchronize()
    prof.export_chrome_trace(str(path))
    return prof


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, Any]:
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    trace = tmp_path_factory.mktemp("cuda") / "train.pt.trace.json"
    prof = _train(trace)
    return autoprof.load(trace).events, prof


def _torch_rows(prof: Any, overhead_names: set[str]) -> dict[tuple[str, str], dict[str, float]]:
    """(key, lane) -> torch's summed numbers, without gpu_user_annotation rows (never ours)
    and without kernels torch also hangs on CUPTI overhead events (``Activity Buffer
    Request``): it links kernels to CPU events by id, and an overhead event's id can equal
    a kernel's External id, so that kernel counts twice (seen on an H200: 121 kernel
    links for 120 kernels). autoprof charges each kernel once, to the op that launched it."""
    rows: dict[tuple[str, str], dict[str, float]] = {}
    for evt in prof.key_averages():
        on_gpu = evt.device_type != torch.autograd.DeviceType.CPU
        if on_gpu and evt.is_user_annotation:
            continue
        row = rows.setdefault((evt.key, "gpu" if on_gpu else "cpu"),
                              {"calls": 0, "self_cpu": 0.0, "cpu_total": 0.0,
                               "self_dev": 0.0, "dev_total": 0.0})
        row["calls"] += evt.count
        row["self_cpu"] += evt.self_cpu_time_total
        row["cpu_total"] += evt.cpu_time_total
        row["self_dev"] += evt.self_device_time_total
        row["dev_total"] += evt.device_time_total
    for evt in prof.events():
        if evt.name not in overhead_names or not evt.kernels:
            continue
        extra_us = sum(k.duration for k in evt.kernels)
        rows[(evt.key, "cpu")]["self_dev"] -= extra_us
        node = evt
        while node is not None:
            rows[(node.key, "cpu")]["dev_total"] -= extra_us
            node = node.cpu_parent
    return rows


def test_device_times_match_key_averages(run: tuple[pd.DataFrame, Any]) -> None:
    events, prof = run
    ours = self_vs_total(events).set_index(["name", "lane"])
    theirs = _torch_rows(prof, set(events.loc[events["cat"] == "overhead", "name"]))
    assert sorted(ours.index) == sorted(theirs)
    kinds = set(events.loc[events["is_gpu_work"], "cat"])
    assert {"kernel", "gpu_memcpy"} <= kinds, kinds
    assert events["tid"][events["lane"] == "cpu"].nunique() >= 2  # autograd's own thread
    for (name, lane), want in theirs.items():
        got = ours.loc[(name, lane)]
        assert got["calls"] == want["calls"], name
        for ours_col, key in (("self_cpu_us", "self_cpu"), ("cpu_total_us", "cpu_total"),
                              ("self_device_us", "self_dev"), ("device_total_us", "dev_total")):
            assert got[ours_col] == pytest.approx(want[key], abs=TOL_US), (name, lane, ours_col)


def test_table_footer_matches_torch(run: tuple[pd.DataFrame, Any]) -> None:
    events, prof = run
    ours = format_table(self_vs_total(events), sort_by="cuda_time_total").splitlines()
    theirs = prof.key_averages().table(sort_by="cuda_time_total", row_limit=100).splitlines()
    assert ours[-2:] == theirs[-2:]  # Self CPU time total, Self CUDA time total
    assert ours[1] == theirs[1]  # same headers
