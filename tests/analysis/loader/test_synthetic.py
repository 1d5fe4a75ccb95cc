"""The synthetic trace generator (also used by benchmarks/) writes what it promises."""

from __future__ import annotations

import gzip
import json

import pytest
from support.invariants import check_events
from support.synthetic import write_synthetic_trace

from autoprof.analysis import load
from autoprof.analysis.loader.chunks import cut_stream


@pytest.mark.parametrize("n_events", [6, 100, 5_000])
def test_exact_event_count_and_valid_kineto_json(tmp_path, n_events):
    path = write_synthetic_trace(tmp_path / "t.json", n_events)
    raw = json.loads(path.read_text())
    assert len(raw["traceEvents"]) == n_events
    assert raw["deviceProperties"][0]["name"] == "NVIDIA H200"


def test_loads_with_steps_nesting_and_linked_kernels(tmp_path):
    events = load(write_synthetic_trace(tmp_path / "t.json", 20_000, seed=3)).events
    check_events(events)
    kernels = events[events["cat"] == "kernel"]
    assert len(kernels) > 1000
    assert (kernels["launch_row"] >= 0).all() and (kernels["op_row"] >= 0).all()
    ops = set(events["name"].to_numpy()[kernels["op_row"].to_numpy()])
    assert ops == {"aten::addmm", "aten::clamp_min"}
    assert (kernels["step"] >= 0).all()
    assert events["depth"].max() >= 4
    steps = events[events["name"].str.startswith("ProfilerStep#")]
    assert len(steps) == events["step"].max() + 1


def test_gzip_and_determinism(tmp_path):
    a = write_synthetic_trace(tmp_path / "a.json.gz", 2_000, gz=True, seed=1)
    b = write_synthetic_trace(tmp_path / "b.json", 2_000, seed=1)
    assert gzip.decompress(a.read_bytes()) == b.read_bytes()
    assert load(a).events.equals(load(b).events)


def test_chunked_decoding_equals_one_piece_decoding(tmp_path, monkeypatch):
    """Big files are cut at event boundaries and decoded chunk by chunk; the result must
    be identical to decoding the whole document at once."""
    import autoprof.analysis.loader.decode as decode

    path = write_synthetic_trace(tmp_path / "t.json", 30_000, seed=2)
    monkeypatch.setattr(decode, "CHUNK_BYTES", 256 * 1024)
    data = path.read_bytes()
    assert sum(kind == "middle" for kind, _ in cut_stream([data], decode.CHUNK_BYTES)) > 20
    chunked = load(path).events
    monkeypatch.setattr(decode, "CHUNK_BYTES", 1024**3)  # one piece
    whole = load(path).events
    assert chunked.equals(whole)


def test_too_few_events_is_a_value_error(tmp_path):
    with pytest.raises(ValueError):
        write_synthetic_trace(tmp_path / "t.json", 3)


def test_compact_one_line_json_is_chunked_too(tmp_path, monkeypatch):
    """A trace re-encoded without whitespace (as json.dump(separators=...) or msgspec write
    it) is cut into chunks as well, instead of being decoded in one piece."""
    import msgspec

    import autoprof.analysis.loader.decode as decode

    indented = write_synthetic_trace(tmp_path / "indented.json", 30_000, seed=4)
    compact = tmp_path / "compact.json"
    compact.write_bytes(msgspec.json.encode(json.loads(indented.read_text())))
    assert b"\n" not in compact.read_bytes()
    monkeypatch.setattr(decode, "CHUNK_BYTES", 256 * 1024)
    pieces = []
    real = decode.decode_chunk
    monkeypatch.setattr(decode, "decode_chunk",
                        lambda doc, *a: pieces.append(len(doc)) or real(doc, *a))
    events = load(compact).events
    assert len(pieces) > 10  # chunks, not the whole-document fallback
    assert events.equals(load(indented).events)


def _record_fallbacks(monkeypatch, decode) -> list[int]:
    failed: list[int] = []
    real = decode._decode_chunked

    def chunked(*args):
        try:
            return real(*args)
        except decode._ChunkFailed:
            failed.append(1)
            raise

    monkeypatch.setattr(decode, "_decode_chunked", chunked)
    return failed


def test_boundary_text_inside_a_name_is_never_a_cut(tmp_path, monkeypatch):
    """Inside a JSON string every quote is escaped, so text that looks like an event boundary
    there never matches: the file is still chunked and the name survives intact."""
    import autoprof.analysis.loader.decode as decode

    path = write_synthetic_trace(tmp_path / "t.json", 5_000, seed=5)
    trace = json.loads(path.read_text())
    tricky = '}, {"ph": "X", "name": "fake"} ' * 4000  # ~140 KB inside one string
    trace["traceEvents"][2_500]["name"] = tricky
    path.write_text(json.dumps(trace))
    monkeypatch.setattr(decode, "CHUNK_BYTES", 64 * 1024)
    failed = _record_fallbacks(monkeypatch, decode)
    events = load(path).events
    assert failed == []
    assert (events["name"] == tricky).sum() == 1
    assert len(events) == sum(1 for e in trace["traceEvents"] if e.get("ph") == "X")


def test_a_cut_inside_nested_objects_falls_back_to_one_piece(tmp_path, monkeypatch):
    """A list of objects inside one event's args does hold real boundaries: a cut there
    cannot decode, so the whole document is decoded instead, with the same result."""
    import autoprof.analysis.loader.decode as decode

    path = write_synthetic_trace(tmp_path / "t.json", 5_000, seed=6)
    trace = json.loads(path.read_text())
    trace["traceEvents"][2_500]["args"]["inputs"] = [{"name": "x", "id": i} for i in range(8000)]
    path.write_text(json.dumps(trace))
    monkeypatch.setattr(decode, "CHUNK_BYTES", 64 * 1024)
    failed = _record_fallbacks(monkeypatch, decode)
    events = load(path).events
    assert failed == [1]  # a cut fell inside the list, and the chunks were given up
    monkeypatch.setattr(decode, "CHUNK_BYTES", 1024**3)  # one piece from the start
    assert events.equals(load(path).events)
