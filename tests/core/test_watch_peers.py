"""Under torch.distributed a drift on one rank records a window on every rank: the rank that
drifted counts its window in the c10d store, the others read it and begin a ``peer`` window at
their next call (a torch HashStore in one process; then two gloo processes, for real)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch.distributed as dist

from autoprof.record.watch import Watch, peers
from autoprof.record.watch.watcher import Trigger, Watcher
from autoprof.runfolder.trigger import TriggerRecord

REPO = Path(__file__).resolve().parents[2]


def _watcher(started: list[Trigger], **options: object) -> Watcher:
    def start(trigger: Trigger) -> bool:
        started.append(trigger)
        return True

    return Watcher("step", Watch(signal=False, **options), 0, start)  # type: ignore[arg-type]


def test_a_drift_published_by_one_rank_asks_the_others(monkeypatch):
    store = dist.HashStore()
    drifted, peer = [], []
    rank1, rank0 = _watcher(drifted), _watcher(peer)
    monkeypatch.setattr(peers, "_group", lambda: (store, 1))
    peers.publish(rank1, "drift")
    peers.publish(rank1, "call")  # a call number: every rank has its own, not published
    assert peers.read(rank1, store, 1) == 0  # its own ask is not for itself
    assert peers.read(rank0, store, 0) == 1 and peers.read(rank0, store, 0) == 0
    rank0.tick(1_000)
    assert [(t.kind, t.from_rank, t.at_call) for t in peer] == [("peer", 1, 1)]
    off = _watcher([], peers=False)
    assert peers.read(off, store, 0) == 1  # read directly; the poller skips peers=False


def test_an_ask_while_a_window_records_is_dropped():
    watcher = _watcher([])
    watcher.window = object()
    watcher.ask("peer", 1)
    assert watcher.pending is None


def test_the_record_names_the_rank_that_asked():
    record = TriggerRecord.from_manifest({"trigger": {
        "kind": "peer", "at_call": 7, "baseline_ms": 1.0, "current_ms": 1.0,
        "healthy_run_id": "20261206-063717-136fa1", "window": 1, "from_rank": 3}})
    assert record is not None and record.from_rank == 3 and "rank 3" in record.describe()


PROGRAM = """
import os, sys, time, torch, torch.distributed as dist
import autoprof
dist.init_process_group("gloo")
rank = dist.get_rank()
calls = 0

@autoprof.autoprof(name="step", out_dir=sys.argv[1], activities=["cpu"],
                   watch=dict(threshold_pct=100, drift_calls=10, baseline_calls=30,
                              signal=False))
def step():
    global calls
    calls += 1
    time.sleep(0.02 if rank == 1 and calls >= 100 else 0.002)

for _ in range(400):
    step()
autoprof.flush()
for w in step.autoprof_session.watcher.opened:
    w.flush()
dist.barrier()
dist.destroy_process_group()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_a_straggler_rank_records_a_window_on_both_ranks(tmp_path):
    port = str(_free_port())
    procs = []
    for rank in (0, 1):
        env = {**os.environ, "PYTHONPATH": str(REPO), "RANK": str(rank), "WORLD_SIZE": "2",
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "OMP_NUM_THREADS": "1",
               "AUTOPROF_FINISH_YIELD_S": "0"}
        procs.append(subprocess.Popen([sys.executable, "-c", PROGRAM, str(tmp_path)], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True))
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-2000:]
    kinds, folders = {}, set()
    for path in tmp_path.glob("step/*/rank*.manifest.json"):
        record = json.loads(path.read_text())
        if "trigger" in record:
            kinds[path.name] = (record["trigger"]["kind"], record["trigger"].get("from_rank"))
            folders.add(path.parent)
    assert kinds == {"rank1.manifest.json": ("drift", None),
                     "rank0.manifest.json": ("peer", 1)}, kinds
    assert len(folders) == 1  # one run folder: the ranks' windows side by side
