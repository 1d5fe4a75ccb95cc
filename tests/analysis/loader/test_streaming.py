"""The streamed read: a trace is read and inflated block by block and decoded chunk by chunk,
never held whole, with the same table as a decode in one piece."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from support.synthetic import write_synthetic_trace

import autoprof.analysis.loader.chunks as chunks
import autoprof.analysis.loader.decode as decode
import autoprof.analysis.loader.source as source
from autoprof.analysis import TraceError, load


def _blocks(data: bytes, size: int) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def test_the_cuts_do_not_depend_on_the_block_size(tmp_path: Path) -> None:
    data = write_synthetic_trace(tmp_path / "t.json", 3_000, seed=7).read_bytes()
    pieces = {size: list(chunks.cut_stream(_blocks(data, size), 16 * 1024))
              for size in (997, 64 * 1024, len(data))}
    assert pieces[997] == pieces[64 * 1024] == pieces[len(data)]
    kinds = [kind for kind, _ in pieces[997]]
    assert kinds[0] == "head" and kinds[-1] == "tail" and kinds.count("middle") > 20
    assert b"".join(piece for _, piece in pieces[997]) == data


def test_the_stream_holds_about_one_chunk_whatever_the_file_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chunks, "SEARCH_WINDOW_BYTES", 8 * 1024)
    data = write_synthetic_trace(tmp_path / "t.json", 20_000, seed=8).read_bytes()
    chunk_bytes, block_bytes = 32 * 1024, 4 * 1024
    handed = [0]

    def counted() -> Iterator[bytes]:
        for block in _blocks(data, block_bytes):
            handed[0] += len(block)
            yield block

    cut_so_far, ahead = 0, []
    for kind, piece in chunks.cut_stream(counted(), chunk_bytes):
        if kind in ("head", "middle"):
            cut_so_far += len(piece)
            ahead.append(handed[0] - cut_so_far)  # read but not yet handed on
    assert len(ahead) > 50
    assert max(ahead) <= 8 * 1024 + block_bytes  # the search window plus one block


@pytest.mark.parametrize("gz", [False, True])
def test_a_load_never_reads_the_file_whole_and_equals_one_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gz: bool
) -> None:
    path = write_synthetic_trace(tmp_path / ("t.json.gz" if gz else "t.json"), 30_000,
                                 gz=gz, seed=9)

    def whole(*_: object) -> None:
        raise AssertionError("the file was read whole")

    monkeypatch.setattr(source, "READ_BYTES", 48 * 1024)
    monkeypatch.setattr(decode, "CHUNK_BYTES", 128 * 1024)
    real = decode.read_bytes
    monkeypatch.setattr(decode, "read_bytes", whole)
    pieces: list[int] = []
    real_chunk = decode.decode_chunk
    monkeypatch.setattr(decode, "decode_chunk",
                        lambda doc, *a: pieces.append(len(doc)) or real_chunk(doc, *a))
    streamed = load(path).events
    assert len(pieces) > 20
    monkeypatch.setattr(decode, "read_bytes", real)
    monkeypatch.setattr(decode, "CHUNK_BYTES", 1024**3)  # one piece
    pd.testing.assert_frame_equal(streamed, load(path).events)


def test_a_gzip_member_ending_where_the_inflate_limit_was_hit_is_not_repeated(
    tmp_path: Path,
) -> None:
    """zlib leaves the bytes after a member in both ``unused_data`` and ``unconsumed_tail``
    when the call that ended it stopped at its output limit (a member of over 4 MiB): the
    next member must be read once."""
    data = write_synthetic_trace(tmp_path / "t.json", 20_000, seed=11).read_bytes()
    assert len(data) > 5 * 1024**2
    path = tmp_path / "members.json.gz"
    path.write_bytes(gzip.compress(data[:-100]) + gzip.compress(data[-100:]))
    assert b"".join(source.stream_bytes(path)) == data
    assert len(load(path).events) == len(load(tmp_path / "t.json").events)


def test_gzip_members_and_zero_padding_stream_as_one(tmp_path: Path) -> None:
    data = write_synthetic_trace(tmp_path / "t.json", 2_000, seed=10).read_bytes()
    path = tmp_path / "members.json.gz"
    path.write_bytes(gzip.compress(data[:5000]) + gzip.compress(data[5000:]) + b"\0" * 64)
    stream = source.stream_bytes(path)
    assert stream.gzip and b"".join(stream) == data and stream.n_bytes == len(data)
    path.write_bytes(gzip.compress(data)[:-40])
    with pytest.raises(TraceError, match="truncated gzip data"):
        b"".join(source.stream_bytes(path))


@pytest.mark.parametrize("block", [1, 5, 13, 4096])
def test_the_key_and_the_cuts_are_found_across_blocks_of_any_size(block: int) -> None:
    # the key, the document's opening and each cut's match straddle block ends here
    events = b",".join(b'{"ph": "X", "name": "op%d", "ts": %d, "dur": 1}' % (i, i)
                       for i in range(40))
    doc = b'  \n{"schemaVersion": 1, "traceEvents": [' + events + b'], "x": 2}'
    pieces = list(chunks.cut_stream(_blocks(doc, block), 200))
    assert pieces == list(chunks.cut_stream([doc], 200))
    assert [kind for kind, _ in pieces][0] == "head" and pieces[-1][0] == "tail"
    assert b"".join(piece for _, piece in pieces) == doc


def test_a_stream_without_the_key_is_one_whole_piece() -> None:
    doc = b'{"other": [' + b'{"ph": "X"}, ' * 50 + b'{}]}'
    assert list(chunks.cut_stream(_blocks(doc, 7), 64)) == [("whole", doc)]
