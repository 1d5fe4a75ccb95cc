"""The finisher never deletes the only copy of a trace: the plain trace goes only after its
compressed copy is written, fsynced and read back; any error keeps it, says why, and a
second finish completes the run. The parse check runs in bounded memory."""

from __future__ import annotations

import gzip
import json
import os
import socket
import tracemalloc
from pathlib import Path

import pytest
from support.manifests import write_manifest

from autoprof import runfolder as rf
from autoprof.record.finisher import folder as finish
from autoprof.runfolder import trace_check

FINAL = "host_1.1000.pt.trace.json.gz"
TRACE = {"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "name": "aten::mm", "ts": 10 + i, "dur": 1, "pid": 1, "tid": 1}
    for i in range(200)]}


def _recorded(tmp_path: Path, content: bytes | None = None) -> tuple[Path, Path]:
    """A run handed over as complete whose one cycle waits as a plain trace."""
    run = tmp_path / "run"
    write_manifest(run, "step", status="recording", requested_status="complete",
                   host=socket.gethostname(), pid=os.getpid(), files=[],
                   options={"schedule": {"active": 1, "repeat": 1}})
    raw = run / rf.raw_trace_name(FINAL)
    raw.write_bytes(json.dumps(TRACE).encode() if content is None else content)
    return run, raw


def _finish(run: Path) -> rf.Manifest | None:
    return finish.finish_one(run, rf.MANIFEST, tables=False)


def test_a_good_trace_is_compressed_checked_and_only_then_removed(tmp_path):
    run, raw = _recorded(tmp_path)
    done = _finish(run)
    assert done is not None and done.status == "complete" and done.retry is None
    assert not raw.exists()
    assert json.loads(gzip.decompress((run / FINAL).read_bytes())) == TRACE


def _fails_then_finishes(monkeypatch, run: Path, raw: Path, target: str, exc: BaseException
                         ) -> None:
    original = raw.read_bytes()

    def broken(*_args: object, **_kw: object) -> None:
        raise exc

    with monkeypatch.context() as patch:
        patch.setattr(finish, target, broken)
        failed = _finish(run)
    assert failed is not None and failed.status == "failed"
    assert raw.read_bytes() == original  # the only copy is kept
    assert failed.error is not None and raw.name in failed.error["message"]
    assert failed.retry == {"requested_status": "complete", "error": None, "raw": [raw.name]}
    on_disk = finish.read_manifest(run / rf.MANIFEST)
    assert on_disk.status == "failed" and on_disk.retry == failed.retry
    assert not (run / FINAL).exists() and not rf.stale_temps(run)
    again = _finish(run)  # the cause gone, finishing again completes the run
    assert again is not None and (again.status, again.error, again.retry) == (
        "complete", None, None)
    assert not raw.exists() and (run / FINAL).is_file()
    assert _finish(run) is None  # and then there is nothing left to do


def test_a_failing_write_keeps_the_raw_trace_and_a_rerun_finishes(tmp_path, monkeypatch):
    run, raw = _recorded(tmp_path)
    _fails_then_finishes(monkeypatch, run, raw, "_write_gzip", OSError(28, "No space left"))


def test_a_memory_error_keeps_the_raw_trace_and_a_rerun_finishes(tmp_path, monkeypatch):
    run, raw = _recorded(tmp_path)
    _fails_then_finishes(monkeypatch, run, raw, "check_trace", MemoryError())


def test_a_copy_that_does_not_read_back_is_removed_and_the_raw_trace_kept(
        tmp_path, monkeypatch):
    run, raw = _recorded(tmp_path)
    real = finish._write_gzip

    def short(src: Path, final: Path) -> tuple[int, int]:
        crc, size = real(src, final)
        return crc, size + 1  # as if the copy lost a byte

    monkeypatch.setattr(finish, "_write_gzip", short)
    failed = _finish(run)
    assert failed is not None and failed.status == "failed"
    assert "does not read back" in failed.error["message"]
    assert raw.is_file() and not (run / FINAL).exists()


def test_a_bad_trace_is_kept_and_the_reason_recorded(tmp_path):
    run, raw = _recorded(tmp_path, b'{"traceEvents": [{"name": "cut')
    failed = _finish(run)
    assert failed is not None and failed.status == "failed"
    assert "is not valid JSON" in failed.error["message"] and raw.is_file()
    assert failed.retry is None and _finish(run) is None  # it can never parse: no retry


def test_opening_a_run_in_the_cli_or_viewer_does_not_retry_a_failed_write(
        tmp_path, monkeypatch):
    run, raw = _recorded(tmp_path)
    with monkeypatch.context() as patch:
        patch.setattr(finish, "check_trace", lambda *_a: (_ for _ in ()).throw(MemoryError()))
        assert _finish(run) is not None
    assert finish.finish_folder(run, this_host_only=True) is None  # as `autoprof summary`
    assert raw.is_file() and finish.finish_folder(run).status == "complete"


@pytest.mark.parametrize(("text", "usable"), [
    ('{"traceEvents": []}', True),
    ('{"a": [1, {"b": 2}], "traceEvents": [{"x": 12345678}, {"n": NaN}], "z": 1}', True),
    ('{"traceEvents": 5, "traceEvents": []}', True),  # the last of two keys, as json.loads
    ('{"traceEvents": [], "traceEvents": 5}', False),
    ('{"traceEvents": 5}', False), ("[1, 2]", False), ("{}", False),
    ('{"traceEvents": [1, 2,]}', None), ('{"traceEvents": [12', None), ("", None),
    ('{"traceEvents": []} extra', None), ('{"traceEvents": [{"a": "cut}]}', None),
])
def test_the_streamed_check_agrees_with_json_loads_across_chunk_edges(
        tmp_path, monkeypatch, text, usable):
    monkeypatch.setattr(trace_check, "CHUNK_BYTES", 5)  # every value crosses a chunk edge
    path = tmp_path / "t.json"
    path.write_text(text)
    if usable:
        trace_check.check_trace(path)
        return
    with pytest.raises(ValueError) as err:
        trace_check.check_trace(path)
    what = "has no traceEvents list" if usable is False else "is not valid JSON"
    assert str(err.value).startswith(f"t.json {what}")


def test_the_check_holds_one_event_at_a_time_not_the_trace(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_check, "CHUNK_BYTES", 64 * 1024)  # memory: a few chunks
    events = [{"ph": "X", "name": f"op{i}", "ts": i, "dur": 1, "args": {"k": "v" * 50}}
              for i in range(40_000)]
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"traceEvents": events}))
    size = path.stat().st_size
    tracemalloc.start()
    try:
        trace_check.check_trace(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert size > 4 * 1024**2 and peak < size / 8  # json.loads would hold it several times
