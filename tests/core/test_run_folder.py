"""The run folder: names, manifest keys, traces (gzipped, one per cycle), tables, statuses."""

from __future__ import annotations

import gzip
import json
import os
import re
import socket

import pytest
import torch

from autoprof import autoprof
from tests.core.conftest import TINY, event_names, load_trace, manifest, only_run, trace_files

MANIFEST_KEYS = {
    "schema_version", "status", "name", "qualname", "source_file", "source_line", "options",
    "versions", "host", "pid", "rank", "world_size", "device", "started_at", "ended_at",
    "warmup_call_ms", "steps_recorded", "files", "error",
}


def _matmul_add(x, w, b):
    return torch.matmul(x, w) + b


def test_layout_manifest_and_trace(traces_root):
    fn = autoprof(name="mm", warmup=2, schedule=dict(wait=1, warmup=1, active=2))(_matmul_add)
    x = torch.randn(16, 16)
    for _ in range(2 + 4):
        fn(x, x, x)
    fn.autoprof_session.flush()
    run = only_run(traces_root, "mm")
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", run.name)
    m = manifest(run)
    assert MANIFEST_KEYS <= set(m)
    assert m["schema_version"] == 1 and m["status"] == "complete" and m["error"] is None
    assert m["qualname"].endswith("_matmul_add") and m["source_file"] == __file__
    assert m["source_line"] == _matmul_add.__code__.co_firstlineno
    assert m["host"] == socket.gethostname() and m["pid"] == os.getpid()
    assert (m["rank"], m["world_size"], m["device"]) == (0, 1, None)
    assert m["versions"]["torch"] == torch.__version__
    assert m["started_at"] <= m["ended_at"]
    assert len(m["warmup_call_ms"]) == 2 and all(t > 0 for t in m["warmup_call_ms"])
    assert m["steps_recorded"] == 2
    traces = trace_files(run)
    assert len(traces) == 1
    worker = f"{socket.gethostname()}_{os.getpid()}"
    assert re.fullmatch(re.escape(worker) + r"\.\d{19}\.pt\.trace\.json\.gz", traces[0].name)
    assert set(m["files"]) >= {traces[0].name}
    with open(traces[0], "rb") as fh:
        assert fh.read(2) == b"\x1f\x8b"  # really gzip
    names = event_names(traces[0])
    assert names.count("mm") == 2  # one record_function label per recorded step
    assert sum(n.startswith("ProfilerStep#") for n in names) == 2
    assert "aten::matmul" in names or "aten::mm" in names
    assert [p.name for p in run.iterdir() if p.name.startswith(".")] == []  # no temp left


def test_one_trace_per_cycle_and_shapes_recorded(traces_root):
    fn = autoprof(name="cycles", warmup=0, schedule=dict(wait=0, warmup=1, active=1, repeat=3))(
        _matmul_add
    )
    x = torch.randn(4, 4)
    for _ in range(6):
        fn(x, x, x)
    fn.autoprof_session.flush()
    run = only_run(traces_root, "cycles")
    assert len(trace_files(run)) == 3
    m = manifest(run)
    assert m["steps_recorded"] == 3 and m["status"] == "complete"
    events = load_trace(trace_files(run)[0])["traceEvents"]
    assert any("Input Dims" in e.get("args", {}) for e in events)


def test_repeat_zero_profiles_until_flushed(traces_root):
    fn = autoprof(name="forever", warmup=0, schedule=dict(wait=0, warmup=1, active=1, repeat=0))(
        _matmul_add
    )
    x = torch.randn(4, 4)
    for _ in range(7):
        fn(x, x, x)
    assert not fn.autoprof_session.done  # repeat=0 never ends on its own
    autoprof.flush()
    run = only_run(traces_root, "forever")
    m = manifest(run)
    assert m["status"] == "complete"
    assert len(trace_files(run)) == 3  # three whole cycles of 2 steps; step 7 was warm-up
    assert m["steps_recorded"] == 3


def test_flushed_before_the_schedule_ends_is_partial(traces_root):
    fn = autoprof(name="short", warmup=0, schedule=dict(wait=0, warmup=1, active=3))(_matmul_add)
    x = torch.randn(4, 4)
    for _ in range(3):  # warmup + 2 of 3 active steps
        fn(x, x, x)
    m = manifest(only_run(traces_root, "short"))
    assert m["status"] == "recording" and m["files"] == []
    autoprof.flush()
    run = only_run(traces_root, "short")
    m = manifest(run)
    assert m["status"] == "partial"
    assert m["steps_recorded"] == 2
    assert len(trace_files(run)) == 1  # what was recorded is exported
    assert event_names(trace_files(run)[0]).count("short") == 2


def test_out_dir_option_beats_env(tmp_path, traces_root):
    fn = autoprof(name="where", warmup=0, schedule=TINY, out_dir=tmp_path / "mine")(_matmul_add)
    x = torch.ones(2, 2)
    fn(x, x, x)
    fn(x, x, x)
    fn.autoprof_session.flush()
    assert manifest(only_run(tmp_path / "mine", "where"))["status"] == "complete"
    assert not traces_root.exists()


def test_tables_are_written_by_the_analysis_layer(traces_root):
    """table.txt and ops.csv come from autoprof.analysis.write_tables (analysis area)."""
    fn = autoprof(name="tables", warmup=0, schedule=TINY)(_matmul_add)
    x = torch.randn(8, 8)
    fn(x, x, x)
    fn(x, x, x)
    fn.autoprof_session.flush()
    run = only_run(traces_root, "tables")
    m = manifest(run)
    assert m["tables_error"] is None, m["tables_error"]
    assert {"table.txt", "ops.csv"} <= set(m["files"])
    header = (run / "ops.csv").read_text().splitlines()[0]
    assert header.startswith("name,calls,self_cpu_us,cpu_total_us")
    assert "tables" in (run / "table.txt").read_text()


def test_missing_analysis_still_completes(monkeypatch, traces_root):
    """The finisher without the analysis layer: the run is complete, tables_error says why."""
    import sys

    import autoprof.record.export as export
    import autoprof.record.finisher.folder as finish

    monkeypatch.setattr(export, "FINISHER_MODULE", "autoprof_no_such_finisher")
    fn = autoprof(name="notables", warmup=0, schedule=TINY)(_matmul_add)
    x = torch.ones(2, 2)
    with pytest.warns(UserWarning, match="python -m autoprof.finish"):
        fn(x, x, x)
        fn(x, x, x)
        fn.autoprof_session.flush()
    run = only_run(traces_root, "notables")
    assert manifest(run)["status"] == "recording"
    monkeypatch.setitem(sys.modules, "autoprof.analysis.report.tables", None)  # not importable
    finish.finish_folder(run)
    m = manifest(run)
    assert m["status"] == "complete"
    assert "autoprof.analysis is not available" in m["tables_error"]
    assert not (run / "table.txt").exists()
    assert json.loads(gzip.decompress(trace_files(run)[0].read_bytes()))["traceEvents"]


def test_every_file_of_a_run_is_readable_like_the_manifest(traces_root):
    old = os.umask(0o022)
    try:
        @autoprof(name="modes", warmup=0, schedule=TINY)
        def f(x):
            return x + 1

        for _ in range(2):
            f(torch.ones(2))
        f.autoprof_session.flush()
    finally:
        os.umask(old)
    run = only_run(traces_root, "modes")
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in run.iterdir()}
    assert {"table.txt", "ops.csv", "manifest.json"} <= set(modes)
    assert set(modes.values()) == {"0o644"}, modes  # table.txt/ops.csv were once 0600


def test_the_manifest_records_what_the_call_was_called_with(traces_root):
    """dtype and shape of each tensor argument (in a batch one level deep), the type of any
    other, keyword ones named: read on the first warm-up call."""
    def step(batch, w, scale=1.0):
        return torch.matmul(batch[0], w) * scale

    fn = autoprof(name="args", warmup=1, schedule=TINY)(step)
    x, w = torch.randn(4, 3), torch.randn(3, 2, dtype=torch.float64)
    fn((x, 7), w.float(), scale=2.0)
    fn((torch.randn(5, 3), 7), w.float(), scale=2.0)  # later calls do not replace it
    fn((x, 7), w.float(), scale=2.0)
    fn.autoprof_session.flush()
    m = manifest(only_run(traces_root, "args"))
    assert m["call_inputs"] == ["tuple(float32[4, 3], int)", "float32[3, 2]", "scale=float"]
