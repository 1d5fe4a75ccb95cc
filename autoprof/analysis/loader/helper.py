"""The decode helper: a second process decodes the second part of a large trace while this
one decodes the first, so a first open uses two cores (docs/loader.md).

The split: the first cut (``chunks.EVENT_START``, a boundary between two events) at or after
``SPLIT_FRACTION`` of the decoded bytes (``GZIP_SPLIT_FRACTION`` for gzip: the helper
inflates the part before its own and drops it). This process streams the trace up to the cut
(``chunks.until_cut``); the helper, ``python -c ... serve()`` with numpy and msgspec only (no
pandas: it starts in about 0.15 s), streams it from the same cut, found in the same window
(``chunks.from_cut``; ``decode_region``: its chunks, then the rest of the document) and
answers once, on its stdout: its chunks as one (their columns concatenated, sent as raw
buffers beside a pickle), the values its interners hold, the document's tail, the cut and
the bytes from it. This process maps the helper's codes to its
own, appends those chunks after its own and decodes the head with the tail, so the columns,
codes and warnings are exactly those of one process reading the trace alone.

What can go wrong, and what happens:

- no cut in the window at the offset: this process reads everything and stops the helper;
- a chunk the helper cannot decode, or a cut the two sides do not agree on (the file
  changed): ``msgspec.DecodeError`` here, as for a chunk of this process (decode.py then
  reads the whole document in one piece);
- the helper cannot start, dies, or answers nothing within ``ANSWER_GRACE_S`` plus
  ``ANSWER_FACTOR`` times what this process took for its part: it is stopped and this
  process decodes the second part itself (``decode_region``, the same code).

Used only for a local trace of at least ``MIN_BYTES`` decoded (a gzip file's size read from
its trailer, when that can be the whole file's) on a machine with two cores or more, and not
under ``AUTOPROF_DECODE_HELPER=0`` or ``no_helper()`` (the many-rank map's workers, parallel
already).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import pickle
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import msgspec
import numpy as np

from autoprof import env
from autoprof.analysis.loader.chunk_decode import CHUNK_BYTES, as_list, decode_chunk
from autoprof.analysis.loader.chunks import cut_events, from_cut, until_cut
from autoprof.analysis.loader.columns import (
    CHUNK_KEYS,
    INTERNED,
    Chunk,
    ColumnBuilder,
    merge_chunks,
)
from autoprof.analysis.loader.remote import TracePath
from autoprof.analysis.loader.source import ByteStream, stream_bytes

SPLIT_FRACTION = 0.55  # of a plain trace's bytes, decoded here
GZIP_SPLIT_FRACTION = 0.62  # of a gzip trace's: the helper inflates the part before too
MIN_BYTES = 48 * 1024**2  # decoded, ~170k events: below, a process costs more than it saves
ANSWER_GRACE_S = 30.0
ANSWER_FACTOR = 10.0
_LENGTH = struct.Struct("<q")
_MAX_PART_BYTES = 1 << 36  # larger than any part of an answer for a trace under the size cap
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])  # the folder holding autoprof/
_ALLOWED: contextvars.ContextVar[bool] = contextvars.ContextVar("autoprof_decode_helper",
                                                                default=True)


@contextlib.contextmanager
def no_helper() -> Iterator[None]:
    """Every trace loaded inside decodes in its own process alone."""
    token = _ALLOWED.set(False)
    try:
        yield
    finally:
        _ALLOWED.reset(token)


@dataclass
class Region:
    """The events from a cut to the end of the document: their chunks, the tail (the last
    events and what closes the document), the cut and the bytes from it."""

    chunks: list[Chunk] = field(default_factory=list)
    tail: bytes = b""
    cut: int | None = None
    n_bytes: int = 0


def decode_region(path: Path, offset: int, builder: ColumnBuilder) -> Region:
    """The events of ``path`` from its first cut at or after the decoded ``offset`` on
    (none when there is no cut there); raises msgspec.DecodeError when a chunk does not
    decode and TraceError when the file cannot be read."""
    region = Region()
    stream = stream_bytes(path, start=offset)
    found: list[int] = []
    try:
        for kind, piece in cut_events(from_cut(stream, offset, found), CHUNK_BYTES):
            if kind == "middle":
                region.chunks.append(decode_chunk(as_list(piece), builder))
            else:
                region.tail = bytes(piece)  # bytes already: no copy
    finally:
        stream.close()
    if found:
        region.cut = found[0]
        region.n_bytes = stream.n_bytes - (found[0] - offset)
    return region


def split_offset(path: TracePath, stream: ByteStream) -> int | None:
    """Where the helper takes over in this trace (module doc): a decoded offset, the cut
    is the first one at or after it; None when no helper is used."""
    size = stream.decoded_size
    if (not isinstance(path, Path) or size is None or size < MIN_BYTES or not _ALLOWED.get()
            or not env.decode_helper_enabled() or (os.cpu_count() or 1) < 2
            or not sys.executable):
        return None
    return int(size * (GZIP_SPLIT_FRACTION if stream.gzip else SPLIT_FRACTION))


def helper_for(path: TracePath, stream: ByteStream) -> Helper | NoHelper:
    """The helper for a trace read from ``stream``, or ``NoHelper`` when none is used."""
    offset = split_offset(path, stream)
    if offset is None:
        return NoHelper()
    assert isinstance(path, Path)  # split_offset admits local paths only
    return Helper(path, offset)


class NoHelper:
    """This process decodes the whole trace."""

    def first_part(self, stream: ByteStream) -> Iterable[bytes]:
        return stream

    def whole(self, document: bytes) -> bytes:
        return document

    def complete(self, last: bytes, builder: ColumnBuilder) -> bytes:
        return last

    def decoded_bytes(self, first_part: int) -> int:
        return first_part

    def close(self) -> None:
        pass


class Helper:
    """This process's side of the helper for one trace (module doc)."""

    def __init__(self, path: Path, offset: int) -> None:
        self._path, self._offset = path, offset
        self._began = time.perf_counter()
        self._cut: list[int] = []  # where this process's part ends, once found
        self._answer: list[Any] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._second_part = 0
        code = (f"import sys; sys.path.insert(0, {_PACKAGE_ROOT!r}); "
                "from autoprof.analysis.loader.helper import serve; serve()")
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", code, str(path), str(offset)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except (OSError, ValueError):
            return
        assert self._proc.stdout is not None
        self._reader = threading.Thread(target=_read_answer, name="autoprof-decode-helper",
                                        args=(self._proc.stdout, self._answer), daemon=True)
        self._reader.start()

    def first_part(self, stream: ByteStream) -> Iterable[bytes]:
        """This process's bytes: up to the cut (all of them when there is none)."""
        return until_cut(stream, self._offset, self._cut)

    def whole(self, document: bytes) -> bytes:
        """A first part with fewer than two cuts is no document: it is read in one piece."""
        if not self._cut:
            return document
        raise msgspec.DecodeError("the first part of a split trace holds fewer than two cuts")

    def complete(self, last: bytes, builder: ColumnBuilder) -> bytes:
        """Decode ``last`` (this process's last piece, up to the cut), add the helper's
        chunks (or decode them here) and return the document's tail. Without a cut,
        ``last`` is the tail."""
        if not self._cut:
            self.close()
            return last
        builder.append(decode_chunk(as_list(last), builder))
        region = self._region(builder)
        if region is None:
            self.close()
            region = decode_region(self._path, self._offset, builder)
        if region.cut != self._cut[0]:  # the file changed under us
            raise msgspec.DecodeError("the two parts of a split trace do not meet")
        for chunk in region.chunks:
            builder.append(chunk)
        self._second_part = region.n_bytes
        return region.tail

    def decoded_bytes(self, first_part: int) -> int:
        """The trace's decoded bytes, from the bytes ``first_part`` streamed here."""
        return self._cut[0] + self._second_part if self._cut else first_part

    def _region(self, builder: ColumnBuilder) -> Region | None:
        """The helper's region in this process's codes, None when it gave none."""
        if self._reader is None:
            return None
        took_s = time.perf_counter() - self._began
        self._reader.join(ANSWER_GRACE_S + ANSWER_FACTOR * took_s)
        if self._reader.is_alive() or not self._answer:
            return None
        body, buffers = self._answer
        self._answer.clear()
        try:
            status, chunk, gained, tail, cut, n_bytes = pickle.loads(body, buffers=buffers)
        except Exception:  # noqa: BLE001 - not the helper's answer (say, a sitecustomize
            return None  # that prints): the second part is decoded here
        if status != "ok":
            raise msgspec.DecodeError(str(status))
        for key, values in gained.items():
            interner = builder.interned(key)
            to_ours = np.fromiter(map(interner.codes.__getitem__, values), np.int32,
                                  len(values))
            if key in chunk.columns:
                chunk.columns[key] = to_ours[chunk.columns[key]]
        return Region([chunk], tail, cut, n_bytes)

    def close(self) -> None:
        """Stop the helper if it still runs, and reap it."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        if self._reader is not None:
            self._reader.join()
        self._proc = None


def _read_answer(pipe: IO[bytes], answer: list[Any]) -> None:
    """Read the helper's answer until it closes its stdout: a pickle and the buffers it
    refers to (``_send``); a cut-short answer leaves ``answer`` empty. (It is unpickled in
    the loading thread: arrays made here would stay in this thread's malloc arena.)"""
    try:
        body = _read_sized(pipe)
        count = _read_sized(pipe, _LENGTH.size)
        if body is None or count is None:
            return
        buffers = []
        n_buffers = _LENGTH.unpack(count)[0]
        if not 0 <= n_buffers <= len(CHUNK_KEYS) + 16:
            return
        for _ in range(n_buffers):
            buffer = _read_sized(pipe)
            if buffer is None:
                return
            buffers.append(buffer)
    except (OSError, ValueError, MemoryError):
        return
    finally:
        with contextlib.suppress(OSError, ValueError):
            pipe.close()
    answer.extend((body, buffers))


def _read_sized(pipe: IO[bytes], n: int | None = None) -> bytes | None:
    """``n`` bytes, or (``n`` None) a length and that many bytes; None when cut short."""
    if n is None:
        head = _read_sized(pipe, _LENGTH.size)
        if head is None:
            return None
        (n,) = _LENGTH.unpack(head)
    if not 0 <= n <= _MAX_PART_BYTES:  # not a length the helper wrote
        return None
    data = pipe.read(n)
    return data if len(data) == n else None


def serve() -> None:
    """The helper process: decode ``argv[1]`` from the offset ``argv[2]`` on and answer on
    stdout with (status, its chunks as one, its interners' values, tail, cut, bytes)."""
    path, offset = Path(sys.argv[1]), int(sys.argv[2])
    out = sys.stdout.buffer
    builder = ColumnBuilder()
    try:
        region = decode_region(path, offset, builder)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
        _send(out, (str(exc) or type(exc).__name__, None, {}, b"", None, 0))
        return
    whole = merge_chunks(region.chunks)  # a few large arrays: the loader frees them whole
    region.chunks.clear()
    gained = {key: builder.interned(key).values() for key in INTERNED}
    _send(out, ("ok", whole, gained, region.tail, region.cut, region.n_bytes))


def _send(out: IO[bytes], value: Any) -> None:
    """``value`` pickled with its arrays' data out of band: the pickle, the number of
    buffers, each buffer (every part after its length)."""
    buffers: list[pickle.PickleBuffer] = []
    body = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    out.write(_LENGTH.pack(len(body)))
    out.write(body)
    out.write(_LENGTH.pack(len(buffers)))
    for buffer in buffers:
        raw = buffer.raw()
        out.write(_LENGTH.pack(raw.nbytes))
        out.write(raw)
    out.flush()
