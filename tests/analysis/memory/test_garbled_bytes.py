"""A ``[memory]`` event with a byte count no device could hold (``Bytes: 1e300``, or a garbled
``Total Allocated``) is dropped with one warning, and the memory answer is the other events'
(never a -1 B or -9.2e18 B peak)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import autoprof

REPO = Path(__file__).resolve().parents[3]


def _memory(ts: float, nbytes: float, allocated: float, addr: int) -> dict[str, object]:
    return {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
            "args": {"Bytes": nbytes, "Total Allocated": allocated, "Total Reserved": 0,
                     "Addr": addr, "Device Type": 0, "Device Id": -1}}


def _trace(tmp_path: Path, garbled: dict[str, object]) -> Path:
    events: list[dict[str, object]] = [
        {"ph": "X", "name": "ProfilerStep#1", "cat": "user_annotation", "pid": 1, "tid": 1,
         "ts": 90, "dur": 100, "args": {}},
        {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 100,
         "dur": 5, "args": {}},
        _memory(110, 1024, 1024, 1), garbled, _memory(130, 1024, 2048, 3),
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


@pytest.mark.parametrize("garbled", [_memory(120, 1e300, 1024, 2),
                                     _memory(120, 1024, 1e300, 2),
                                     _memory(120, -1e300, -1e300, 2)],
                         ids=["bytes", "total", "both-negative"])
def test_a_garbled_byte_count_is_one_warning_and_a_sane_answer(tmp_path, garbled):
    path = _trace(tmp_path, garbled)
    run = autoprof.load(path)
    notes = [w for w in run.load_warnings if "beyond 4 EiB" in w]
    assert len(notes) == 1 and "dropped 1 memory events" in notes[0]
    (device,) = run.summary()["memory"]["devices"]
    assert device["peak_allocated_bytes"] == 2048 and device["allocations"] == 2
    done = subprocess.run([sys.executable, "-m", "autoprof", "summary", str(path)],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("beyond 4 EiB") == 1
    assert "-1 B" not in done.stdout and "peak allocated 2 KiB" in done.stdout
