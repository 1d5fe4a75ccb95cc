"""Bad input gives one line naming the file and the problem (the CLI exits 2 where nothing
can be shown), never a traceback: a CUDA trace whose kernels all ran before the first step,
garbled manifests, a garbled whatif.json, an Arrow cache with the right key but other
dtypes, a path the OS refuses."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from support.manifests import write_manifest
from support.runs import write_run

from autoprof.analysis import TraceError, load
from autoprof.analysis.loader import cache
from autoprof.analysis.loader.whatif import read_whatif

REPO = Path(__file__).resolve().parents[2]
TRACE = "w.1.pt.trace.json.gz"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "AUTOPROF_LOCK_WAIT_S": "2"}
    return subprocess.run([sys.executable, "-m", "autoprof", *args], capture_output=True,
                          text=True, timeout=120, env=env, cwd=REPO)


def _no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr, done.stderr[-3000:]


def _kernels_before_the_steps(run: Path) -> Path:
    """A CUDA trace (a device, kernels, launches) whose GPU work all ran before the first
    ProfilerStep: no GPU work inside the profiled window."""
    ev: list[dict[str, Any]] = []
    for i in range(3):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                   "tid": 1, "ts": 100 + i * 50, "dur": 5, "args": {"correlation": 10 + i}})
        ev.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                   "ts": 110 + i * 50, "dur": 20,
                   "args": {"correlation": 10 + i, "device": 0, "stream": 7}})
    for s in range(3):
        t = 1000 + s * 200
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s + 1}",
                   "pid": 1, "tid": 1, "ts": t, "dur": 150, "args": {}})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,
                   "ts": t + 10, "dur": 50, "args": {}})
    doc = {"schemaVersion": 1, "traceEvents": ev,
           "deviceProperties": [{"id": 0, "name": "NVIDIA H200",
                                 "totalGlobalMem": 150109880320}]}
    run.mkdir(parents=True)
    (run / TRACE).write_bytes(gzip.compress(json.dumps(doc).encode()))
    write_manifest(run, "early", files=[TRACE], warmup_call_ms=[1.0, 0.01, 0.01],
                   wait_call_ms=[0.01])
    return run


def test_kernels_that_all_run_before_the_first_step_give_a_summary(tmp_path):
    run = _kernels_before_the_steps(tmp_path / "early")
    done = _cli("summary", str(run))
    _no_traceback(done)
    assert done.returncode == 0
    assert "The GPU runs no work inside the profiled steps" in done.stdout


@pytest.mark.parametrize("change", [
    {"world_size": "two"}, {"options": {"schedule": {"repeat": "x"}}},
    {"options": {"schedule": []}}, {"steps_recorded": "x"}, {"rank": "x"}])
@pytest.mark.parametrize("status", ["complete", "recording"])
def test_a_manifest_with_fields_of_the_wrong_type_is_no_traceback(tmp_path, change, status):
    run = write_run(tmp_path, status=status, pid=2**22 + 17)
    path = run / "manifest.json"
    record = json.loads(path.read_text())
    record.update(change)
    path.write_text(json.dumps(record))
    done = _cli("summary", "--json", str(run))
    _no_traceback(done)
    assert done.returncode in (0, 2)
    if status == "complete":
        return
    finished = subprocess.run([sys.executable, "-m", "autoprof.finish", str(run)],
                              capture_output=True, text=True, timeout=120, cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    _no_traceback(finished)


def test_a_manifest_nested_100k_deep_is_one_line(tmp_path):
    run = write_run(tmp_path)
    path = run / "manifest.json"
    text = path.read_text().rstrip().rstrip("}")
    path.write_text(text + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}")
    done = _cli("summary", str(run))
    _no_traceback(done)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and str(path) in done.stderr


def _garbled_whatif(run: Path) -> Path:
    record = {"schema_version": 1, "results": [
        {"fix": "compile", "applicable": True, "status": "faster", "baseline_us": 10.0,
         "fixed_us": 5.0, "break_even_calls": "many", "speedup": "fast"}]}
    path = run / "whatif.json"
    path.write_text(json.dumps(record))
    return path


def test_a_garbled_whatif_is_one_line_from_the_loader_and_the_cli(tmp_path):
    run = write_run(tmp_path)
    path = _garbled_whatif(run)
    with pytest.raises(TraceError) as caught:
        read_whatif(run)
    assert str(caught.value) == f"{path}: fix 'compile': speedup is 'fast', not a number"
    done = _cli("summary", str(run))
    _no_traceback(done)
    assert done.returncode == 0  # the trace's analysis does not depend on the file
    (line,) = [ln for ln in done.stderr.splitlines() if "whatif.json" in ln]
    assert line == (f"autoprof: warning: {path}: fix 'compile': speedup is 'fast', not a "
                    "number (what-if results ignored)")
    assert "WHAT-IF" not in done.stdout


def test_a_cache_with_the_right_key_and_other_dtypes_is_ignored_and_rebuilt(tmp_path,
                                                                            monkeypatch):
    monkeypatch.setenv("AUTOPROF_CACHE_MIN_BYTES", "0")
    trace = write_run(tmp_path) / "gpuhost_4242.1.pt.trace.json.gz"
    first = load(trace)
    cache.wait_for_writes()
    target = cache.cache_path(trace)
    reader = ipc.open_file(pa.memory_map(str(target), "r"))
    table = reader.read_all()
    column = table.schema.get_field_index("ts_us")
    table = table.set_column(column, "ts_us", pa.compute.cast(table["ts_us"], pa.string()))
    with ipc.new_file(str(target) + ".new", table.schema) as writer:  # same key and metadata
        writer.write_table(table)
    shutil.move(str(target) + ".new", target)
    again = load(trace)
    notes = [w for w in again.load_warnings if "ignored the cache" in w]
    (note,) = notes
    assert re.fullmatch(f"ignored the cache {re.escape(target.name)}: column ts_us holds "
                        r"\w+, not float64; rebuilt from the trace", note), note
    assert again.events["ts_us"].dtype == "float64"
    assert again.events["ts_us"].tolist() == first.events["ts_us"].tolist()
    cache.wait_for_writes()
    assert not [w for w in load(trace).load_warnings if "ignored" in w]  # rebuilt: used now


def test_a_5000_character_path_is_one_line(tmp_path):
    long_path = tmp_path / ("a" * 5000)
    done = _cli("summary", str(long_path))
    _no_traceback(done)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "File name too long" in done.stderr
    assert len(done.stderr) < 500
