"""AppTest: a run folder its process left 'recording' is finished when the viewer opens it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from support.apptest import markdown_texts, open_app
from support.viewer import _h200

from autoprof import runfolder

RUN = "matmul_add/20261130-070000-0000aa"
RAW = ".h200_457.1790857026000000000.pt.trace.json.raw"


def _dead_pid() -> int:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    pid = int(child.stdout)
    assert not runfolder.pid_alive(pid)
    return pid


def _left_recording(root: Path) -> Path:
    """A run killed right after its window: a complete raw trace, the manifest 'recording'."""
    folder = root / RUN
    folder.mkdir(parents=True)
    (folder / RAW).write_text(json.dumps(_h200("n64_cold")))
    manifest = {
        "schema_version": 1, "status": "recording", "name": "matmul_add",
        "qualname": "matmul_add", "source_file": "bench.py", "source_line": 1,
        "options": {"schedule": {"wait": 0, "warmup": 1, "active": 1, "repeat": 1}},
        "versions": {"autoprof": "0.1.0", "torch": "2.11.0", "python": "3.12"},
        "host": socket.gethostname(), "pid": _dead_pid(), "rank": 0, "world_size": 1,
        "device": None, "started_at": "2026-11-30T07:00:00Z", "ended_at": None,
        "warmup_call_ms": [], "steps_recorded": 0, "files": [], "error": None,
    }
    (folder / runfolder.MANIFEST).write_text(json.dumps(manifest))
    return folder


def test_a_run_left_recording_is_finished_with_one_line(tmp_path, monkeypatch):
    root = tmp_path / "traces"
    folder = _left_recording(root)
    at = open_app(root, monkeypatch)  # its only run: opened on the Overview
    assert json.loads((folder / runfolder.MANIFEST).read_text())["status"] == "complete"
    assert not (folder / RAW).exists()
    notes = [t for t in markdown_texts(at) if "left recording" in t]
    assert len(notes) == 1, list(markdown_texts(at))
    assert "finished it: complete" in notes[0]
    assert not [e.value for e in at.error], "the finished run loads"
