"""torch.distributed: two CPU ranks (gloo) write into one run folder with per-rank manifests."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.ports import free_port

from tests.core.conftest import event_names, manifest, only_run, trace_files

REPO = Path(__file__).resolve().parents[2]

RANK = textwrap.dedent(
    """
    import datetime, os, torch
    import torch.distributed as dist
    from autoprof import autoprof

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))

    @autoprof(name="ddp_step", warmup=1, schedule=dict(wait=0, warmup=1, active=1))
    def step(x):
        y = x * (dist.get_rank() + 1)
        dist.all_reduce(y)
        return y

    for _ in range(3):
        assert step(torch.ones(2)).tolist() == [3.0, 3.0]
    autoprof.flush()
    dist.destroy_process_group()
    """
)


@pytest.mark.slow
def test_two_gloo_ranks_share_one_run_folder(tmp_path, traces_root):
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    port = free_port()
    procs = []
    for rank in range(2):
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "RANK": str(rank),
            "WORLD_SIZE": "2",
            "AUTOPROF_DIST_TIMEOUT_S": "20",
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, str(script)], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
        )
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    run = only_run(traces_root, "ddp_step")
    top = manifest(run)
    assert top["ranks"] == [0, 1] and top["world_size"] == 2 and top["rank"] == 0
    for rank in range(2):
        m = manifest(run, f"rank{rank}.manifest.json")
        assert m["rank"] == rank and m["world_size"] == 2 and m["status"] == "complete"
        assert m["pid"] == procs[rank].pid
        (trace,) = [t for t in trace_files(run) if t.name.startswith(f"rank{rank}.")]
        assert trace.name in m["files"]
        has_tables = {"table.txt", "ops.csv"} <= set(m["files"])
        assert has_tables == (rank == 0) or m["tables_error"] is not None  # rank 0's tables
        assert "ddp_step" in event_names(trace)
    assert len(trace_files(run)) == 2
