"""One decoder answer whatever the file size: every input here goes through the one-piece
path (small files) and the chunked path (files over ``CHUNK_BYTES``, and over the size up to
which the whole document may be parsed by Python's json), and both must give the same events
table or the same error."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import autoprof.analysis.loader.decode as decode
import autoprof.analysis.loader.repair as repair
from autoprof.analysis import TraceError, load
from autoprof.analysis.loader.chunks import cut_stream


def _events(n: int, name: str = "aten::mm", start: int = 0) -> list[dict[str, object]]:
    return [{"ph": "X", "cat": "cpu_op", "name": f"{name}_{i}", "pid": 1, "tid": 1,
             "ts": 10 * (start + i), "dur": 5, "args": {"External id": i}}
            for i in range(n)]


def _text(events: list[dict[str, object]]) -> str:
    return ",\n".join(json.dumps(e) for e in events)


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    """(small-file answer, big-file answer): an events table or the error's text."""
    answers = []
    for chunk, whole_limit in ((1024**3, 64 * 1024**2), (512, 0)):
        monkeypatch.setattr(decode, "CHUNK_BYTES", chunk)
        monkeypatch.setattr(repair, "_STDLIB_FALLBACK_MAX_BYTES", whole_limit)
        try:
            answers.append(load(path).events)
        except TraceError as err:
            answers.append(str(err))
    return answers[0], answers[1]


def _same(path: Path, monkeypatch: pytest.MonkeyPatch) -> pd.DataFrame:
    small, big = _both(path, monkeypatch)
    assert isinstance(small, pd.DataFrame), small
    assert isinstance(big, pd.DataFrame), big
    pd.testing.assert_frame_equal(small, big)
    return small


def test_chunking_is_really_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [' + _text(_events(200)) + "]}")
    monkeypatch.setattr(decode, "CHUNK_BYTES", 512)
    data = path.read_bytes()
    assert sum(kind == "middle" for kind, _ in cut_stream([data], decode.CHUNK_BYTES)) > 10
    assert len(_same(path, monkeypatch)) == 200


def test_a_duplicate_traceevents_key_gives_the_last_list_at_every_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [' + _text(_events(200, "first")) + '],\n'
                    '"traceEvents": [{"ph": "X", "name": "second", "ts": 1, "dur": 1}]}')
    events = _same(path, monkeypatch)
    assert list(events["name"]) == ["second"]


def test_event_like_objects_after_traceevents_are_not_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [' + _text(_events(3, "real")) + '],\n'
                    '"otherEvents": [' + _text(_events(200, "other")) + "]}")
    events = _same(path, monkeypatch)
    assert len(events) == 3 and not events["name"].str.startswith("other").any()


def test_a_nan_literal_is_read_at_every_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = _events(200)
    text = _text(events).replace('"dur": 5}', '"dur": NaN}', 1)
    text = text.replace('"ts": 1000,', '"ts": Infinity,', 1)
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [' + text + '], "traceName": "NaN \\" NaN"}')
    table = _same(path, monkeypatch)
    assert len(table) == 199  # the event whose ts is not a number has no place in time


def test_an_array_trace_without_its_closing_bracket_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed = tmp_path / "closed.json"
    closed.write_text("[" + _text(_events(200)) + "]")
    expected = _same(closed, monkeypatch)
    for tail in ("", ",", ",\n", "\n"):
        path = tmp_path / "open.json"
        path.write_text("[" + _text(_events(200)) + tail)
        pd.testing.assert_frame_equal(_same(path, monkeypatch), expected)


def test_an_array_trace_cut_inside_an_event_is_still_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.json"
    path.write_text("[" + _text(_events(200))[:-20])
    small, big = _both(path, monkeypatch)
    assert isinstance(small, str) and small == big
    assert "truncated" in small
