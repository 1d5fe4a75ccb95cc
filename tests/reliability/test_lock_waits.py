"""A run folder's lock never hangs a reader or the finisher: another process holding it (a
stopped finisher, a stuck reader) costs at most the bounded wait, with one line naming who
holds it and how long this process waited; a complete run is read with no lock at all."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.runs import write_run

from autoprof import runfolder as rf

REPO = Path(__file__).resolve().parents[2]
HOLD = ("import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "time.sleep(120)\n")


@pytest.fixture
def holder() -> Iterator[object]:
    """Start a second process that takes a folder's flock and keeps it (killed at the end)."""
    started: list[subprocess.Popen[str]] = []

    def hold(folder: Path) -> subprocess.Popen[str]:
        proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)],
                                stdout=subprocess.PIPE, text=True)
        started.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        return proc

    yield hold
    for proc in started:
        proc.kill()
        proc.wait()


def _cli(*args: str, wait_s: str = "1") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AUTOPROF_LOCK_WAIT_S": wait_s, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=60, env=env, cwd=REPO)


def _left_recording(root: Path) -> Path:
    """A run whose process is gone, recorded on this host: opening it finishes it."""
    return write_run(root, status="recording", pid=2**22 + 17, host=socket.gethostname())


def test_summary_of_a_complete_run_takes_no_lock(tmp_path, holder):
    run = write_run(tmp_path)
    holder(run)  # type: ignore[operator]
    t0 = time.monotonic()
    done = _cli("-m", "autoprof", "summary", str(run), wait_s="30")
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - t0 < 25  # not the 30 s wait: no lock was asked for
    assert "locked" not in done.stderr


def test_summary_of_a_locked_run_left_recording_waits_only_the_bound(tmp_path, holder):
    run = _left_recording(tmp_path)
    proc = holder(run)  # type: ignore[operator]
    done = _cli("-m", "autoprof", "summary", str(run))
    lines = [line for line in done.stderr.splitlines() if "locked by pid" in line]
    assert len(lines) == 1, done.stderr
    assert f"locked by pid {proc.pid}" in lines[0] and "waiting 1.0 s" in lines[0]  # type: ignore[attr-defined]
    assert "Traceback" not in done.stderr


def test_the_finisher_on_a_locked_folder_gives_up_with_one_line(tmp_path, holder):
    run = _left_recording(tmp_path)
    proc = holder(run)  # type: ignore[operator]
    t0 = time.monotonic()
    done = _cli("-m", "autoprof.finish", str(run))
    assert time.monotonic() - t0 < 30
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert f"locked by pid {proc.pid}" in done.stderr  # type: ignore[attr-defined]
    record = rf.read_manifest(run / rf.MANIFEST, rf.MAX_MANIFEST_BYTES)
    assert record.status == "recording"  # untouched: run it again later


def test_a_viewer_client_opening_a_locked_run_is_not_blocked(tmp_path, holder, monkeypatch):
    pytest.importorskip("streamlit")
    from autoprof.viewer._loading import finish_left_recording

    run = _left_recording(tmp_path)
    holder(run)  # type: ignore[operator]
    monkeypatch.setenv("AUTOPROF_LOCK_WAIT_S", "0.5")
    t0 = time.monotonic()
    assert finish_left_recording(run) is False
    assert time.monotonic() - t0 < 10


def test_folder_lock_says_who_holds_it_and_how_long_it_waited(tmp_path, holder):
    proc = holder(tmp_path)  # type: ignore[operator]
    t0 = time.monotonic()
    with pytest.raises(rf.FolderLocked) as caught:
        with rf.folder_lock(tmp_path, wait_s=0.3):
            pass
    assert 0.3 <= time.monotonic() - t0 < 5
    assert str(caught.value).startswith(f"{tmp_path}: locked by pid {proc.pid}")  # type: ignore[attr-defined]
    assert "waiting 0.3 s" in str(caught.value)
