"""A real two-process gloo run on CPU, rank 1 slow on purpose: each rank gets its own
breakdown, and the fast rank's wait in the collective is named as waiting for rank 1."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from support.ports import free_port

from autoprof.analysis import load

WORKER = textwrap.dedent('''
    import os, sys, time
    import torch, torch.distributed as dist
    torch.set_num_threads(1)
    rank, out, port = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    x = torch.randn(64, 64)
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=3)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=schedule) as prof:
        for _ in range(5):
            y = x @ x
            if rank == 1:
                time.sleep(0.05)  # the straggler
            dist.all_reduce(y)
            prof.step()
    prof.export_chrome_trace(os.path.join(out, f"rank{rank}.json"))
    dist.barrier()
    dist.destroy_process_group()
''')


@pytest.mark.slow
def test_gloo_fast_rank_waits_for_the_straggler(tmp_path):
    pytest.importorskip("torch.distributed")
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    out = tmp_path / "job"
    out.mkdir()
    port = str(free_port())
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(out), port],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for r in (0, 1)]
    for p in procs:
        output, _ = p.communicate(timeout=120)
        assert p.returncode == 0, output.decode(errors="replace")[-2000:]
    s = load(out).summary()
    assert s["straggler_rank"] == 1
    rank0, rank1 = s["ranks"]
    assert rank0["verdict"] == rank1["verdict"] == "cpu-only"
    for r in (rank0, rank1):
        bd = r["breakdown"]
        assert sum(bd["buckets_us"].values()) == pytest.approx(bd["step_us"], rel=0.01)
        assert bd["buckets_us"]["gpu_compute"] == 0
    # rank 0 spends its step inside the all-reduce, waiting for rank 1
    first = rank0["opportunities"][0]
    assert first["cause"] == "host_cpu_work"
    assert first["pct_of_step"] > 50
    assert "waits here for rank 1" in first["hint"]
    # rank 1 sleeps on the host (untraced) before it joins
    assert rank1["opportunities"][0]["cause"] == "host_untraced"
    assert "waits here" not in rank1["opportunities"][0]["hint"]
