"""autoprof.runfolder.Manifest: the typed run-folder record every writer and reader uses."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from support.manifests import manifest, record, write_manifest

from autoprof import runfolder as rf
from autoprof.analysis import TraceError
from autoprof.analysis.loader.manifest import read_manifest, read_record
from autoprof.runfolder import Manifest, ManifestError, cycles_status, final_status

REPO = Path(__file__).resolve().parents[2]
OLD_RUN = REPO / "tests" / "data" / "old_schema_run" / "matmul_add" / "20251001-120000-0a1b2c"


def test_round_trip_keeps_every_field_and_unknown_keys(tmp_path):
    written = record("train_step", run_id="20261130-080000-abcdef", rank=1, world_size=2,
                     ranks=[0, 1], requested_status="partial", tables_error="no pandas",
                     device={"name": "NVIDIA H200", "properties": {}}, wait_call_ms=[0.5],
                     error={"type": "RuntimeError", "message": "boom", "phase": "active"},
                     files=["rank1.1.pt.trace.json.gz"], some_future_key={"a": 1})
    path = write_manifest(tmp_path, "train_step", **{
        k: v for k, v in written.to_dict().items() if k != "name"})
    back = Manifest.from_json(path.read_bytes(), path)
    assert back == written
    assert back.extra == {"some_future_key": {"a": 1}}
    assert json.loads(back.to_json()) == written.to_dict()


def test_absent_keys_read_as_their_defaults():
    m = Manifest.from_json(b'{"schema_version": 1, "name": "x"}', "m.json")
    assert (m.status, m.world_size, m.rank, m.files, m.options) == ("complete", 1, None, None, {})
    assert m.warmup_call_ms == () and m.wait_call_ms == () and m.error is None
    assert m.repeat == 1 and m.active == 0 and m.trace_prefix == ""


def test_the_old_schema_run_reads_with_defaults():
    m = read_record(OLD_RUN / "manifest.json")
    assert m.name == "matmul_add" and m.files is None and m.world_size == 1
    assert read_manifest(OLD_RUN / "manifest.json")["options"] == {}


def test_call_times_keep_finite_non_bool_numbers_only():
    data = {"schema_version": 1, "name": "x",
            "warmup_call_ms": [1, 2.5, True, "3", None, math.nan, math.inf, [4]],
            "wait_call_ms": "not a list"}
    m = Manifest.from_json(data, "m.json")
    assert m.warmup_call_ms == (1, 2.5) and m.wait_call_ms == ()
    assert isinstance(m.warmup_call_ms[0], int)  # read back as written


def test_wrong_types_of_the_other_keys_read_as_defaults():
    data = {"schema_version": 1, "name": "x", "world_size": "2", "rank": True, "pid": 1.5,
            "options": [], "device": "H200", "steps_recorded": False, "ranks": "0,1"}
    m = Manifest.from_json(data, "m.json")
    assert (m.world_size, m.rank, m.pid, m.options, m.device) == (1, None, None, {}, None)
    assert m.steps_recorded is None and m.ranks is None


@pytest.mark.parametrize(("content", "field", "problem"), [
    ({"name": "x"}, "schema_version", "manifest lacks required keys ['schema_version']"),
    ({"schema_version": 1}, "name", "manifest lacks required keys ['name']"),
    ({"schema_version": True, "name": "x"}, "schema_version", "is not a positive integer"),
    ({"schema_version": 0, "name": "x"}, "schema_version", "is not a positive integer"),
    ({"schema_version": 99, "name": "x"}, "schema_version", "upgrade autoprof"),
    ({"schema_version": 1, "name": 5}, "name", "manifest name 5 is not a string"),
    ({"schema_version": 1, "name": "x", "status": "done"}, "status", "'done' is not one of"),
    ({"schema_version": 1, "name": "x", "files": "a.json"}, "files", "not a list of file"),
    ({"schema_version": 1, "name": "x", "files": [1]}, "files", "not a list of file names"),
])
def test_each_bad_core_field_is_one_line_naming_the_file_and_the_field(
        tmp_path, content, field, problem):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(content))
    with pytest.raises(ManifestError) as err:
        Manifest.from_json(path.read_bytes(), path)
    assert err.value.field == field
    text = str(err.value)
    assert text.startswith(f"{path}: ") and problem in text and "\n" not in text
    with pytest.raises(TraceError) as loaded:  # the analysis loader: the same message
        read_record(path)
    assert str(loaded.value) == text


@pytest.mark.parametrize(("data", "problem"), [
    (b"[1, 2]", "manifest is a JSON list, not an object"),
    (b"{not json", "manifest is not valid JSON"),
])
def test_a_manifest_that_is_not_an_object_names_the_file(data, problem):
    with pytest.raises(ManifestError, match=problem) as err:
        Manifest.from_json(data, "run/manifest.json")
    assert str(err.value).startswith("run/manifest.json: ")


def test_the_writer_and_the_readers_share_one_rank_manifest_name():
    assert rf.rank_manifest(3) == "rank3.manifest.json"
    assert rf.rank_of_manifest("rank3.manifest.json") == 3
    assert rf.rank_of_manifest("manifest.json") is None
    assert rf.manifest_name(None) == rf.MANIFEST and rf.manifest_name(2) == rf.rank_manifest(2)
    assert Path(rf.rank_manifest(12)).match(rf.RANK_MANIFEST_GLOB)


def _recording(**over: object) -> Manifest:
    return record(status="recording", files=[], steps_recorded=0, **over)


@pytest.mark.parametrize(("asked", "cycles", "repeat", "status", "ended_by"), [
    ("complete", 2, 2, "complete", None),  # handed over: what was asked
    ("partial", 1, 2, "partial", None),
    ("partial", 0, 2, "partial", None),  # a flushed run with no trace is still partial
    (None, 2, 2, "complete", rf.final.DIED),  # died after every cycle was written
    (None, 1, 2, "partial", rf.final.DIED),  # died between cycles: whole ones kept
    (None, 3, 0, "complete", rf.final.DIED),  # repeat=0 cycles until stopped
])
def test_the_final_status_rule(asked, cycles, repeat, status, ended_by):
    m = _recording(requested_status=asked, options={"schedule": {"repeat": repeat}})
    final = final_status(m, cycles)
    assert (final.status, final.ended_by, final.error) == (status, ended_by, None)
    assert final.requested_status is None  # the request is not kept in a finished record


@pytest.mark.parametrize(("asked", "message"), [
    ("complete", rf.final.NO_TRACE_ASKED), (None, rf.final.NO_TRACE_DIED)])
def test_no_trace_fails_the_run_unless_partial_was_asked(asked, message):
    final = final_status(_recording(requested_status=asked), 0)
    assert final.status == "failed"
    assert final.error == {"type": "NoTrace", "message": message, "phase": "export"}


def test_an_error_fails_the_run_and_the_first_error_is_kept():
    recorded = {"type": "RuntimeError", "message": "boom", "phase": "active"}
    export = {"type": "OSError", "message": "disk full", "phase": "export"}
    assert final_status(_recording(requested_status="complete"), 2, export).error == export
    final = final_status(_recording(requested_status="complete", error=recorded), 2, export)
    assert (final.status, final.error) == ("failed", recorded)


def test_cycles_status_and_steps_in():
    assert cycles_status(0, 1) == "complete" and cycles_status(3, 3) == "complete"
    assert cycles_status(3, 2) == "partial"
    m = record(options={"schedule": {"active": 4, "repeat": 2}})
    assert rf.steps_in(m, 2) == 8 and m.repeat == 2


def test_the_test_helper_writes_what_the_reader_reads(tmp_path):
    path = write_manifest(tmp_path, "step", files=["a.pt.trace.json.gz"])
    assert read_manifest(path) == manifest("step", files=["a.pt.trace.json.gz"])


def test_the_whatif_record_waits_for_the_folder_lock_and_lists_itself(tmp_path):
    import threading
    import time

    from autoprof.runfolder.whatif import WHATIF_NAME, whatif_record, write_whatif

    write_manifest(tmp_path, files=["a.pt.trace.json.gz"], some_future_key=1)
    held = threading.Event()

    def hold() -> None:
        with rf.folder_lock(tmp_path):
            held.set()
            time.sleep(0.5)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    t0 = time.monotonic()
    write_whatif(tmp_path, whatif_record([]))
    waited_s = time.monotonic() - t0
    holder.join()
    assert waited_s > 0.3  # a finisher rewriting the manifest now cannot drop the entry
    after = read_record(tmp_path / rf.MANIFEST)
    assert after.files == ("a.pt.trace.json.gz", WHATIF_NAME)
    assert after.extra == {"some_future_key": 1}


def test_the_recorder_writes_cudnn_benchmark_as_the_program_left_it():
    import torch

    from autoprof.record.session import driver

    was = torch.backends.cudnn.benchmark
    try:
        for flag in (True, False):
            torch.backends.cudnn.benchmark = flag
            assert driver.backend_flags() == {"cudnn_benchmark": flag}
    finally:
        torch.backends.cudnn.benchmark = was
