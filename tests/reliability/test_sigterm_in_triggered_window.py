"""SIGTERM while a triggered window records: the steps it recorded are written (a readable
run that says why it ended), and the process still exits with SIGTERM's status; once the
window is over SIGTERM is the default again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autoprof.record.watch import terminate

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

PROGRAM = """
import sys, time, torch
import autoprof

calls = 0

@autoprof.autoprof(name="f", out_dir=sys.argv[1], activities=["cpu"], warmup_calls=1,
                   schedule=dict(wait=0, warmup=0, active=3),
                   watch=dict(at_calls=[10], signal=False))
def f(x):
    global calls
    calls += 1
    if calls == 13:  # the window's third active step (call 10 is its warm-up call)
        print("IN WINDOW", flush=True)
        time.sleep(60)
    return x @ x

x = torch.ones(8, 8)
for i in range(20):
    f(x)
"""


def _runs(out_dir: Path) -> list[dict[str, object]]:
    records = [json.loads(p.read_text()) for p in out_dir.glob("f/*/manifest.json")]
    return sorted(records, key=lambda r: str(r["started_at"]))


def test_sigterm_in_a_triggered_window_writes_its_steps(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "AUTOPROF_FINISH_YIELD_S": "0"}
    proc = subprocess.Popen([sys.executable, "-c", PROGRAM, str(tmp_path)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "IN WINDOW"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == terminate.SIGTERM_STATUS
    deadline = time.monotonic() + 60
    while any(r["status"] == "recording" for r in _runs(tmp_path)):
        assert time.monotonic() < deadline, _runs(tmp_path)
        time.sleep(0.2)
    healthy, triggered = _runs(tmp_path)
    assert "trigger" in triggered and triggered["status"] in ("failed", "partial")
    assert triggered["steps_recorded"] == 2  # calls 11 and 12: what it recorded is written
    error = triggered.get("error")
    assert isinstance(error, dict) and error["type"] == "Terminated", triggered
    (run_dir,) = [p.parent for p in tmp_path.glob("f/*/manifest.json")
                  if json.loads(p.read_text()).get("trigger")]
    assert list(run_dir.glob("*.pt.trace.json.gz"))


def test_the_default_comes_back_when_the_window_ends() -> None:
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert terminate.install()
    assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    terminate.uninstall()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
