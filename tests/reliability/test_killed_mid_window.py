"""A program killed mid-window never leaves a run ``recording`` for ever: its finisher decides
from the pipe's end, not from whether ``/proc`` still shows the process (a process killed
mid-window may still be exiting, for seconds on a GPU, when its pipe closes; where /proc
shows another pid namespace even a zombie counts as alive)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autoprof.record.finisher import folder as finish
from autoprof.runfolder import Manifest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

PROGRAM = """
import sys, time, torch
import autoprof
from autoprof.record import export

@autoprof.autoprof(out_dir=sys.argv[1], warmup_calls=1,
                   schedule=dict(wait=0, warmup=0, active=1000))
def f(x):
    time.sleep(0.01)
    return x @ x

x = torch.ones(8, 8)
for i in range(1000):
    f(x)
    if i == 20:
        print("IN WINDOW", flush=True)
        if sys.argv[2] == "pipe-ends-first":  # as the kernel closes it before the pid goes
            export._finishers[0]._stdin.close()
            time.sleep(30)
"""


def _start(out_dir: Path, how: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "AUTOPROF_FINISH_YIELD_S": "0"}
    proc = subprocess.Popen([sys.executable, "-c", PROGRAM, str(out_dir), how], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "IN WINDOW"
    return proc


def _final(out_dir: Path, timeout_s: float = 60) -> dict[str, object]:
    deadline = time.monotonic() + timeout_s
    while True:
        (path,) = out_dir.glob("f/*/manifest.json")
        record: dict[str, object] = json.loads(path.read_text())
        if record["status"] != "recording" or time.monotonic() > deadline:
            return record
        time.sleep(0.2)


def test_sigterm_mid_window_ends_the_run_with_the_reason(tmp_path: Path) -> None:
    proc = _start(tmp_path, "sigterm")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == -signal.SIGTERM  # it still ends by SIGTERM
    record = _final(tmp_path)
    assert record["status"] == "partial", record  # its steps written (interrupted_windows)
    assert str(record.get("ended_by")).startswith("SIGTERM"), record  # says why it ended


def test_the_pipe_ending_before_the_process_is_gone_still_finishes_the_run(
        tmp_path: Path) -> None:
    proc = _start(tmp_path, "pipe-ends-first")
    try:
        record = _final(tmp_path, timeout_s=25)  # while the process still lives
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
    assert record["status"] in ("partial", "failed"), record


def test_only_the_watched_recorder_counts_as_gone() -> None:
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        record = Manifest(name="f", schema_version=1, run_id="r", status="recording",
                          pid=live.pid, host=socket.gethostname())
        assert finish._recording_elsewhere(record, watch=False)  # a reader: it lives
        finish._recorder[:] = [live.pid]
        assert not finish._recording_elsewhere(record, watch=True)  # its own finisher
        finish._recorder[:] = [live.pid + 1]
        assert finish._recording_elsewhere(record, watch=True)
    finally:
        finish._recorder[:] = []
        live.kill()
        live.wait()
