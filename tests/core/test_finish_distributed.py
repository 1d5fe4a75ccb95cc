"""torch.distributed: each rank's finisher finishes its own trace; rank 0's manifest waits for
every rank's, or ends ``partial`` naming the missing ranks (two CPU ranks over gloo)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.ports import free_port

from tests.core.conftest import manifest, only_run, trace_files

REPO = Path(__file__).resolve().parents[2]

RANK = textwrap.dedent(
    """
    import datetime, os, sys, time, torch
    import torch.distributed as dist
    import autoprof.record.export as export
    from autoprof import autoprof

    mode = sys.argv[1]
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank = dist.get_rank()
    if mode == "broken" and rank == 1:
        export.FINISHER_MODULE = "autoprof_no_such_finisher"

    @autoprof(name="ddp", warmup=0, schedule=dict(wait=0, warmup=1, active=1))
    def step(x, last):
        y = x * (rank + 1)
        dist.all_reduce(y)
        if last and rank == 1 and mode == "killed":
            os.kill(os.getpid(), 9)  # SIGKILL in its last step: rank 1 never writes a trace
        if last and rank == 1:
            time.sleep(2)  # rank 1 ends its window well after rank 0
        return y

    step(torch.ones(2), False)
    step(torch.ones(2), True)
    autoprof.flush()
    dist.destroy_process_group()
    """
)


def _run_ranks(tmp_path: Path, mode: str) -> list[subprocess.Popen[str]]:
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    port = free_port()
    procs = []
    for rank in range(2):
        env = {**os.environ, "PYTHONPATH": str(REPO), "MASTER_ADDR": "127.0.0.1",
               "MASTER_PORT": str(port), "RANK": str(rank), "WORLD_SIZE": "2",
               "AUTOPROF_DIST_TIMEOUT_S": "5"}
        procs.append(subprocess.Popen([sys.executable, str(script), mode], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for rank, p in enumerate(procs):
        _, err = p.communicate(timeout=120)
        assert p.returncode == (-9 if mode == "killed" and rank == 1 else 0), err
    return procs


@pytest.mark.slow
def test_rank0_manifest_waits_for_a_later_rank(tmp_path, traces_root):
    _run_ranks(tmp_path, "late")
    run = only_run(traces_root, "ddp")
    top = manifest(run)
    assert top["status"] == "complete" and top["ranks"] == [0, 1]
    assert "missing_ranks" not in top
    rank1 = run / "rank1.manifest.json"
    assert manifest(run, rank1.name)["status"] == "complete"
    assert (run / "manifest.json").stat().st_mtime_ns >= rank1.stat().st_mtime_ns
    assert {t.name.split(".")[0] for t in trace_files(run)} == {"rank0", "rank1"}


@pytest.mark.slow
def test_a_rank_that_never_finishes_makes_rank0_partial(tmp_path, traces_root):
    _run_ranks(tmp_path, "broken")
    run = only_run(traces_root, "ddp")
    top = manifest(run)
    assert top["status"] == "partial" and top["missing_ranks"] == [1]
    assert manifest(run, "rank0.manifest.json")["status"] == "complete"
    assert manifest(run, "rank1.manifest.json")["status"] == "recording"
    from autoprof.record.finisher.folder import main

    assert main([str(run)]) == 0  # finishing the missing rank later completes rank 0's
    top = manifest(run)
    assert top["status"] == "complete" and "missing_ranks" not in top
    assert manifest(run, "rank1.manifest.json")["status"] == "complete"


@pytest.mark.slow
def test_a_rank_sigkilled_makes_the_run_partial_in_manifest_summary_and_run_list(
        tmp_path, traces_root):
    _run_ranks(tmp_path, "killed")
    run = only_run(traces_root, "ddp")
    assert manifest(run, "rank1.manifest.json")["status"] == "failed"
    top = manifest(run)
    assert top["status"] == "partial" and top["missing_ranks"] == [1]
    assert top["missing_reason"].startswith("rank 1 failed: NoTrace")
    env = {**os.environ, "PYTHONPATH": str(REPO), "AUTOPROF_DIR": str(traces_root)}
    before = (run / "manifest.json").read_bytes(), (run / "manifest.json").stat().st_mtime_ns
    for _ in range(2):  # read twice: never rewritten, never "finished it"
        out = subprocess.run([sys.executable, "-m", "autoprof", "summary", "--json", str(run)],
                             env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0 and "finished it" not in out.stderr, out.stderr
        assert json.loads(out.stdout)["status"] == "partial"
    after = (run / "manifest.json").read_bytes(), (run / "manifest.json").stat().st_mtime_ns
    assert after == before
    from autoprof.analysis import find_runs

    (row,) = find_runs(traces_root).to_dict(orient="records")
    assert row["status"] == "partial"
