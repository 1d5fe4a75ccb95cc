"""Several processes: same name and folder at once; a process killed while exporting."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.core.conftest import manifest, run_dirs, run_listing, trace_files

REPO = Path(__file__).resolve().parents[2]

SAME_NAME = textwrap.dedent(
    """
    import sys, time, pathlib, torch
    import autoprof.runfolder as artifacts
    from autoprof import autoprof

    fixed = iter(["20260101-000000-abcdef"])  # both processes first try the same run id
    original = artifacts.new_run_id
    artifacts.new_run_id = lambda: next(fixed, None) or original()
    go = pathlib.Path(sys.argv[1])
    while not go.exists():
        time.sleep(0.01)

    @autoprof(name="same", warmup=0, schedule=dict(wait=0, warmup=1, active=1))
    def f(x):
        return x * 2

    assert [f(torch.tensor(i)).item() for i in range(3)] == [0, 2, 4]

    @autoprof(name="unfinished", warmup=1, schedule=dict(wait=0, warmup=1, active=3))
    def g(x):
        return x * 2

    for _ in range(4):  # warm-up, profiler warm-up, 2 of 3 active steps; then the program ends
        g(torch.ones(2))
    """
)

KILLED = textwrap.dedent(
    """
    import sys, time, torch
    import autoprof.record.export as export
    from autoprof import autoprof

    def stuck(prof, run_dir, worker):
        raw, final = export.trace_paths_for(run_dir, worker)
        raw.write_text('{"traceEvents": [{"name": "half')  # half a trace, then hang
        print("EXPORTING", flush=True)
        time.sleep(600)
        raise SystemExit("never reached: the test kills this process")

    export.export_raw_trace = stuck

    @autoprof(name="killed", warmup=0, schedule=dict(wait=0, warmup=1, active=1))
    def f(x):
        return x + 1

    import threading
    threading.Thread(target=lambda: print("RETURNED", flush=True)).start()
    f(torch.ones(2)); f(torch.ones(2))
    """
)


def _env(traces: Path) -> dict[str, str]:
    return {**os.environ, "AUTOPROF_DIR": str(traces), "PYTHONPATH": str(REPO)}


@pytest.mark.slow
def test_two_processes_same_name_same_folder_make_two_runs(tmp_path, traces_root):
    script = tmp_path / "same.py"
    script.write_text(SAME_NAME)
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(go)], env=_env(traces_root),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for _ in range(2)
    ]
    time.sleep(0.5)
    go.write_text("")
    for p in procs:
        out, err = p.communicate(timeout=90)
        assert p.returncode == 0, err
    runs = run_dirs(traces_root, "same")
    assert len(runs) == 2
    pids = set()
    for run in runs:
        m = manifest(run)
        assert m["status"] == "complete"
        pids.add(m["pid"])
        traces = trace_files(run)
        assert len(traces) == 1 and traces[0].name.split(".")[0].endswith(f"_{m['pid']}")
    assert pids == {p.pid for p in procs}
    assert "20260101-000000-abcdef" in {r.name for r in runs}
    # interpreter exit ends a run the schedule did not finish: partial, recorded steps kept
    unfinished = run_dirs(traces_root, "unfinished")
    assert len(unfinished) == 2
    for run in unfinished:
        m = manifest(run)
        assert m["status"] == "partial" and m["steps_recorded"] == 2 and m["ended_at"]
        (trace,) = trace_files(run)
        assert trace.name in m["files"]


@pytest.mark.slow
def test_killed_during_export_leaves_nothing_that_reads_as_complete(tmp_path, traces_root):
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    proc = subprocess.Popen(
        [sys.executable, str(script)], env=_env(traces_root),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        seen = ""  # two threads print: their lines may interleave
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not ("EXPORTING" in seen and "RETURNED" in seen):
            chunk = proc.stdout.readline()
            if not chunk and proc.poll() is not None:
                break
            seen += chunk
        assert "EXPORTING" in seen and "RETURNED" in seen, seen
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    (run,) = run_dirs(traces_root, "killed")
    m = _wait_finished(run)
    assert m["status"] == "failed"  # the finisher saw the half trace: never "complete"
    assert "is not valid JSON" in m["error"]["message"] and m["files"] == []
    # the half trace is kept (hidden, never the only copy deleted), nothing else is left
    assert [n for n in run_listing(run) if not n.endswith(".pt.trace.json.raw")] == [
        "manifest.json"]
    assert "is kept" in m["error"]["message"]
    from autoprof.analysis import find_runs

    listed = find_runs(traces_root)
    assert list(listed["status"]) == ["failed"]


def _wait_finished(run: Path, timeout_s: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        m = manifest(run)
        if m["status"] != "recording" or time.monotonic() > deadline:
            return m
        time.sleep(0.1)
