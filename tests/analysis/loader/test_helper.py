"""The decode helper (loader/helper.py): a second process decodes a large plain trace's
second part; the columns, codes, metadata and warnings must be exactly those of one process
reading the file alone, whatever happens to the helper."""

from __future__ import annotations

import dataclasses
import gzip
import pickle
import sys

import msgspec
import numpy as np
import pytest
from support.synthetic import write_synthetic_trace

from autoprof.analysis.loader import decode, helper
from autoprof.analysis.loader.chunks import from_cut, until_cut
from autoprof.analysis.loader.decode import TraceFile, read_trace
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.source import stream_bytes

N_EVENTS = 30_000  # ~10 MB: several 1 MiB chunks on each side of the split


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return write_synthetic_trace(tmp_path_factory.mktemp("helper") / "t.json", N_EVENTS, seed=5)


@pytest.fixture
def small_split(monkeypatch):
    """Use the helper for any trace, and count the helpers started."""
    monkeypatch.setattr(helper, "MIN_BYTES", 0)
    monkeypatch.setenv("AUTOPROF_DECODE_HELPER", "1")
    started: list[helper.Helper] = []
    original = helper.Helper.__init__

    def counting(self, path, offset):
        started.append(self)
        original(self, path, offset)

    monkeypatch.setattr(helper.Helper, "__init__", counting)
    return started


def _alone(path, monkeypatch) -> TraceFile:
    with monkeypatch.context() as m:
        m.setenv("AUTOPROF_DECODE_HELPER", "0")
        return read_trace(path)


def _assert_same(a: TraceFile, b: TraceFile) -> None:
    for f in dataclasses.fields(a.columns):
        x, y = getattr(a.columns, f.name), getattr(b.columns, f.name)
        if isinstance(x, np.ndarray):
            same = np.array_equal(x, y, equal_nan=x.dtype.kind == "f")
            assert x.dtype == y.dtype and same, f.name
        elif f.name == "memory":
            for g in dataclasses.fields(x):
                assert np.array_equal(getattr(x, g.name), getattr(y, g.name), equal_nan=True)
        else:
            assert x == y, f.name
    assert (a.metadata, a.labels, a.n_bytes, a.warnings) == (b.metadata, b.labels, b.n_bytes,
                                                              b.warnings)


def test_split_trace_is_the_trace_read_alone(trace, small_split, monkeypatch):
    with_helper = read_trace(trace)
    assert len(small_split) == 1
    alone = _alone(trace, monkeypatch)
    assert len(small_split) == 1  # none started with AUTOPROF_DECODE_HELPER=0
    assert len(with_helper.columns) == N_EVENTS
    _assert_same(with_helper, alone)


@pytest.mark.parametrize("block_bytes", [4096, 1 << 30])
def test_the_two_parts_meet_at_one_cut_between_two_events(trace, block_bytes):
    data = trace.read_bytes()
    offset = int(len(data) * helper.SPLIT_FRACTION)
    rest = data[offset:]
    first_cut: list[int] = []
    second_cut: list[int] = []
    first = b"".join(until_cut(_blocks(data, block_bytes), offset, first_cut))
    second = b"".join(from_cut(_blocks(rest, block_bytes), offset, second_cut))
    assert first_cut == second_cut and first_cut[0] >= offset
    assert first + second == data
    cut = first_cut[0]
    assert data[cut:cut + 1] == b"{" and data[:cut].rstrip().endswith(b"},")


def _blocks(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def test_no_cut_near_the_end_leaves_everything_to_the_first_part(trace):
    data = trace.read_bytes()
    found: list[int] = []
    assert b"".join(until_cut([data], len(data) - 10, found)) == data and found == []
    assert b"".join(from_cut([data[-10:]], len(data) - 10, found)) == b"" and found == []


def test_no_helper_for_small_traces_urls_or_inside_no_helper(trace, monkeypatch):
    monkeypatch.setenv("AUTOPROF_DECODE_HELPER", "1")

    def offset(path=trace):
        stream = stream_bytes(trace)
        try:
            return helper.split_offset(path, stream)
        finally:
            stream.close()

    assert offset() is None  # under MIN_BYTES
    monkeypatch.setattr(helper, "MIN_BYTES", 0)
    assert offset() == int(trace.stat().st_size * helper.SPLIT_FRACTION)
    with helper.no_helper():
        assert offset() is None
    assert offset(path="memory://bucket/t.json") is None
    monkeypatch.setenv("AUTOPROF_DECODE_HELPER", "0")
    assert offset() is None


@pytest.mark.parametrize("fraction", [helper.GZIP_SPLIT_FRACTION, 0.9999])
def test_a_gzip_trace_is_split_on_its_decoded_bytes(trace, tmp_path, small_split, monkeypatch,
                                                     fraction):
    monkeypatch.setattr(helper, "GZIP_SPLIT_FRACTION", fraction)  # 0.9999: no cut there
    zipped = tmp_path / "t.json.gz"
    zipped.write_bytes(gzip.compress(trace.read_bytes(), compresslevel=1))
    stream = stream_bytes(zipped)
    assert stream.decoded_size == trace.stat().st_size  # from the gzip trailer
    stream.close()
    with_helper = read_trace(zipped)
    alone = _alone(zipped, monkeypatch)
    _assert_same(with_helper, alone)
    assert len(small_split) == 1


def test_a_gzip_trailer_that_cannot_be_the_size_means_no_helper(trace, tmp_path, small_split,
                                                                monkeypatch):
    data = trace.read_bytes()
    members = tmp_path / "members.json.gz"
    members.write_bytes(gzip.compress(data[:-100]) + gzip.compress(data[-100:]))
    stream = stream_bytes(members)
    assert stream.decoded_size is None  # the last member's 100 bytes: less than the file
    stream.close()
    _assert_same(read_trace(members), _alone(members, monkeypatch))
    assert small_split == []
    two = tmp_path / "two.json.gz"  # a trailer that is a size, but only the last member's
    two.write_bytes(gzip.compress(data[:len(data) // 3]) + gzip.compress(data[len(data) // 3:]))
    _assert_same(read_trace(two), _alone(two, monkeypatch))
    assert len(small_split) == 1


def test_a_helper_that_cannot_start_or_dies_leaves_the_work_here(trace, small_split,
                                                                 monkeypatch):
    alone = _alone(trace, monkeypatch)
    with monkeypatch.context() as m:
        m.setattr(sys, "executable", "/nonexistent/python")  # Popen fails
        _assert_same(read_trace(trace), alone)
    with monkeypatch.context() as m:
        _run_instead(m, "import sys; sys.stdout.buffer.write(b'\\x05'); sys.exit(3)")
        _assert_same(read_trace(trace), alone)  # it starts, writes half a length and dies
    with monkeypatch.context() as m:  # a whole message that is not an answer
        _run_instead(m, "import pickle, struct, sys; b = pickle.dumps({'a': 1}); "
                        "sys.stdout.buffer.write(struct.pack('<qqq', len(b), 0, 0)[:8] + b "
                        "+ struct.pack('<q', 0))")
        _assert_same(read_trace(trace), alone)
    with monkeypatch.context() as m:  # text on stdout (a chatty sitecustomize): no answer
        _run_instead(m, "print('hello from sitecustomize' * 10)")
        _assert_same(read_trace(trace), alone)
    assert len(small_split) == 4
    assert all(h._proc is None for h in small_split)  # reaped


def _run_instead(m: pytest.MonkeyPatch, code: str) -> None:
    """The helper's process runs ``code`` instead of ``serve()``."""
    real_popen = helper.subprocess.Popen
    m.setattr(helper.subprocess, "Popen",
              lambda args, **kwargs: real_popen([args[0], "-c", code], **kwargs))


def test_a_helper_that_never_answers_is_stopped(trace, small_split, monkeypatch):
    alone = _alone(trace, monkeypatch)
    monkeypatch.setattr(helper, "ANSWER_GRACE_S", 0.0)
    monkeypatch.setattr(helper, "ANSWER_FACTOR", 0.0)
    _run_instead(monkeypatch, "import time; time.sleep(600)")
    _assert_same(read_trace(trace), alone)
    proc = small_split[0]._proc
    assert proc is None  # killed and reaped


def test_a_bad_chunk_in_the_second_part_reads_the_document_whole(tmp_path, small_split,
                                                                  monkeypatch):
    path = write_synthetic_trace(tmp_path / "t.json", N_EVENTS, seed=6)
    data = bytearray(path.read_bytes())
    at = data.rfind(b'"name": "aten::addmm"', 0, len(data) * 9 // 10)
    assert at > len(data) * helper.SPLIT_FRACTION + 1024**2
    data[at + 9:at + 10] = b"\xff"  # invalid UTF-8: the whole-document path repairs it
    path.write_bytes(bytes(data))
    with_helper = read_trace(path)
    assert len(small_split) == 1
    assert any("invalid UTF-8" in w for w in with_helper.warnings)
    _assert_same(with_helper, _alone(path, monkeypatch))


def test_a_first_part_with_too_few_cuts_reads_the_document_whole(trace, small_split,
                                                                 monkeypatch):
    monkeypatch.setattr(decode, "CHUNK_BYTES", 1024**3)  # the first part is one piece
    alone = _alone(trace, monkeypatch)
    _assert_same(read_trace(trace), alone)
    assert len(small_split) == 1


def test_a_decode_error_in_the_helper_is_a_decode_error_here(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    good = b'{"ph": "X", "name": "a", "ts": 1, "dur": 1},\n'
    path.write_bytes(good + b'{"ph": oops},\n' + good * 60_000 + b'{"ph": "X"}\n]}')
    answer: list = []
    proc = helper.subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[3]); "
         "from autoprof.analysis.loader.helper import serve; sys.argv = sys.argv[:3]; serve()",
         str(path), "0", helper._PACKAGE_ROOT], capture_output=True, check=True)
    import io

    helper._read_answer(io.BytesIO(proc.stdout), answer)
    status, chunk = pickle.loads(answer[0], buffers=answer[1])[:2]
    assert status != "ok" and "malformed" in status and chunk is None
    h = helper.Helper.__new__(helper.Helper)
    h._reader, h._answer, h._began = _Done(), answer, 0.0
    with pytest.raises(msgspec.DecodeError):
        h._region(helper.ColumnBuilder())


class _Done:
    def join(self, timeout=None):
        return None

    def is_alive(self):
        return False


def test_an_unreadable_file_is_a_trace_error(tmp_path, small_split):
    path = tmp_path / "missing.json"
    with pytest.raises(TraceError):
        read_trace(path)
