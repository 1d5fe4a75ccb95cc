"""Run folders autoprof itself wrote on an H200 (traces/examples, see
docs/gpu-validation.md): the diagnostics say the right thing about each pattern."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.store import committed

RUNS = Path(__file__).resolve().parents[3] / "traces" / "examples"


def _run(name: str, index: int = 0):
    folders = sorted(p for p in (RUNS / name).iterdir() if p.is_dir())
    if not folders:
        pytest.skip(f"no run folder under {RUNS / name}")
    return committed.run(folders[index])


def _ids(run) -> dict[str, object]:
    return {d.id: d for d in run.diagnostics()}


def test_eager_launches_vs_cuda_graph_replay():
    eager, graph = _run("eager_100"), _run("graph_replay")
    assert eager.verdict().kind == "overhead-bound"
    assert {"overhead-bound", "short-kernels"} <= set(_ids(eager))
    assert graph.verdict().kind == "compute-bound"
    # one cudaGraphLaunch starts 100 tiny kernels: their sum, not each, meets the launch cost
    assert not {"overhead-bound", "short-kernels"} & set(_ids(graph))


def test_autoprofs_own_end_of_cycle_sync_is_not_blamed_on_the_program():
    for index in range(4):
        run = _run("matmul_add", index)
        ov = run.overhead()
        assert ov.host_syncs >= 1  # the sync exists in the trace ...
        assert ov.host_syncs_in_steps == 0  # ... but it is autoprof's, not the program's
        assert "host-sync" not in _ids(run)


def test_warmup_calls_show_the_cold_start():
    run = _run("matmul_add", 0)
    calls = run.manifest["warmup_call_ms"]
    assert calls[0] > 100 * calls[-1]
    cold = _ids(run)["cold-start"]
    assert "first warm-up call took" in cold.message


def test_ddp_nccl_straggler_is_rank_1():
    run = _run("ddp_step")
    assert run.world_size == 2
    assert run.straggler_rank == 1
    table = run.ranks().set_index("rank")
    assert table.loc[1, "compute_us_median"] > 25_000  # the 30 ms sleep
    assert table.loc[0, "collective_us_median"] > 25_000  # rank 0 waits in NCCL
    assert "straggler" in _ids(run)


def test_nccl_wait_is_named_in_the_verdict_reason():
    run = _run("ddp_step")
    rank0 = run.verdict(rank=0)
    assert rank0.evidence["gpu_comm_pct"] > 80  # rank 0's GPU "busy" waiting in NCCL
    assert "NCCL communication kernels" in rank0.reason
    # rank 0's NCCL time is exposed (nothing runs beside it): communication-bound; rank 1,
    # the straggler, sleeps on the host
    assert list(run.ranks()["verdict"]) == ["communication-bound", "overhead-bound"]
    eager = _run("eager_100").verdict()
    assert eager.evidence["gpu_comm_pct"] == 0 and "NCCL" not in eager.reason
