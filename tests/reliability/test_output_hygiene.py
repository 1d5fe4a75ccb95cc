"""Every text autoprof prints escapes control characters and shortens long names: op names
and whatif.json fields with ANSI/OSC escapes, backspaces and CR never reach the terminal
raw, a 5 MB op name is not printed whole (text, markdown, diff); memory byte counts beyond
int64 give a note, not numpy warnings and a peak of -9.2e18."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.memory_trace import cuda_steps, mem, write
from support.runs import write_run

from autoprof.units import safe_text

REPO = Path(__file__).resolve().parents[2]
TITLE = "aten::\x1b]0;pwned\x07title"  # OSC: retitles the terminal
CLEAR = "aten::\x1b[2J\x1b[Hclear\r\b\b"  # CSI: clears the screen; CR, backspaces
HUGE = "aten::" + "x" * 5_000_000
RAW = ("\x1b", "\x07", "\r", "\b")
MAX_OUTPUT_BYTES = 200_000


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "autoprof", *args], capture_output=True,
                          text=True, timeout=180, env=env, cwd=REPO)


def _clean(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    for stream in (done.stdout, done.stderr):
        assert not [c for c in RAW if c in stream]
        assert len(stream.encode()) < MAX_OUTPUT_BYTES


def _names_trace(path: Path, clear_us: float = 30.0) -> Path:
    ev = []
    for s in range(8):
        t = 1000 + s * 1000
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s + 1}",
                   "pid": 1, "tid": 1, "ts": t, "dur": 100 + clear_us + s, "args": {}})
        for i, (name, dur) in enumerate(((TITLE, 30.0), (HUGE, 30.0), (CLEAR, clear_us))):
            ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1,
                       "ts": t + 5 + i * 35, "dur": dur, "args": {}})
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    return path


def test_safe_text_escapes_control_characters_and_cuts_long_text():
    assert safe_text("aten::mm µs") == "aten::mm µs"
    assert safe_text(TITLE) == "aten::\\x1b]0;pwned\\x07title"
    assert safe_text(CLEAR) == "aten::\\x1b[2J\\x1b[Hclear\\r\\x08\\x08"
    assert safe_text(HUGE, 50) == "aten::" + "x" * 44 + "... (5,000,006 characters, cut)"
    assert len(safe_text("\x1b" * 10_000, 100)) < 150


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_op_names_with_escapes_and_a_5mb_name_print_escaped_and_short(tmp_path, fmt):
    done = _cli("summary", "--format", fmt, str(_names_trace(tmp_path / "names.json")))
    assert done.returncode == 0
    _clean(done)
    assert "pwned" in done.stdout and "\\x1b" in done.stdout  # shown, as text
    assert "characters, cut)" in done.stdout


def test_whatif_fields_with_escapes_and_a_5mb_reason_print_escaped_and_short(tmp_path):
    run = write_run(tmp_path)
    record = {"schema_version": 1, "results": [
        {"fix": "compile\x1b]0;pwned\x07", "applicable": False, "status": "not applicable",
         "reason": "\x1b[2J\x1b[H cleared\r\b" + "y" * 5_000_000,
         "suggested_by": ["overhead-bound\x1b[31m"]}]}
    (run / "whatif.json").write_text(json.dumps(record))
    for fmt in ("text", "markdown"):
        done = _cli("summary", "--format", fmt, str(run))
        assert done.returncode == 0
        _clean(done)
    assert "compile\\x1b]0;pwned\\x07" in done.stdout or "compile" in done.stdout


@pytest.mark.slow
def test_the_diff_renderer_escapes_names_and_cuts_long_ones(tmp_path):
    before = _names_trace(tmp_path / "before.json")
    after = _names_trace(tmp_path / "after.json", clear_us=200.0)
    for fmt in ("text", "markdown"):
        done = _cli("diff", "--format", fmt, str(before), str(after))
        _clean(done)
        assert "clear" in done.stdout


def test_memory_byte_counts_beyond_int64_give_a_note_not_a_negative_peak(tmp_path):
    events = cuda_steps(3, 2, 1024)
    events.append(mem(events[-1]["ts"] + 1, 2**64, 2**64 + 5, 2**65, 7))
    trace = write(tmp_path / "mem.json", events, capacity=80 * 1024**3)
    done = _cli("summary", str(trace))
    assert done.returncode == 0
    _clean(done)
    assert "RuntimeWarning" not in done.stderr and "e+06 TiB" not in done.stdout
    assert "-" not in "".join(ln for ln in done.stdout.splitlines() if "peak" in ln)
    (note,) = [ln for ln in done.stderr.splitlines() if "4 EiB" in ln]
    assert note.startswith(f"autoprof: warning: {trace}: dropped 1 memory events")
    summary = json.loads(_cli("summary", "--json", str(trace)).stdout)
    peaks = [d["peak_allocated_bytes"] for d in summary["memory"]["devices"]]
    assert peaks and min(peaks) >= 0


def test_a_warning_is_one_line(tmp_path):
    run = write_run(tmp_path)
    (run / "whatif.json").write_text("{not json")
    done = _cli("summary", str(run))
    (line,) = [ln for ln in done.stderr.splitlines() if "whatif.json" in ln]
    assert line.startswith("autoprof: warning: ") and "warnings.warn" not in done.stderr
    shutil.rmtree(run)
