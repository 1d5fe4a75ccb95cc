"""A real two-process gloo run (CPU), rank 1 delayed on purpose: the analysis names it."""

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
                time.sleep(0.08)  # the straggler
            dist.all_reduce(y)
            prof.step()
    prof.export_chrome_trace(os.path.join(out, f"rank{rank}.json"))
    dist.barrier()  # neither rank tears gloo down while the other still talks to it
    dist.destroy_process_group()
''')


@pytest.mark.slow
def test_gloo_two_ranks_straggler(tmp_path):
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
    run = load(out)
    assert run.world_size == 2
    table = run.ranks()
    assert list(table["rank"]) == [0, 1]
    assert (table["collectives"] > 0).all()
    compute = table.set_index("rank")["compute_us_median"]
    assert compute[1] - compute[0] >= 60_000  # the 80 ms sleep, before the all-reduce
    assert run.straggler_rank == 1
    assert {d.id for d in run.diagnostics()} >= {"straggler"}
    assert run.summary()["straggler_rank"] == 1
