"""``read_trace(path) -> TraceFile``: a Kineto JSON trace as columns plus its metadata.

Fast path, streamed: the file's decoded bytes arrive in blocks (``source.stream_bytes``:
plain files read, gzip inflated, block by block) and are cut at event boundaries about every
``CHUNK_BYTES`` (``chunks.cut_stream``); each middle chunk decodes as a JSON list through
msgspec typed structs and becomes numpy columns before the next is read, and the head and
tail (with all top-level metadata) decode as one document at the end. So the file is never
in memory whole, only one chunk of Python objects is alive at a time, and peak memory is
about the columns plus a few chunks. If any piece fails to decode, the file is read again
and decoded in one piece (same result, more memory), so a wrong cut can cost time but never
change the answer. (Inside a JSON string every quote is escaped, so a cut never falls there;
one in a list of objects nested in an event's args can, and leaves a chunk that cannot
decode.) A document that fails whole goes to ``repair.py``.
"""

from __future__ import annotations

import mmap
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from autoprof.analysis.loader import schema
from autoprof.analysis.loader.chunks import cut_stream
from autoprof.analysis.loader.columns import ColumnBuilder, Metadata, RawColumns, coerce_loose
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.remote import RemoteFile, TracePath
from autoprof.analysis.loader.repair import decode_with_repairs, first_byte
from autoprof.analysis.loader.source import ByteStream, read_bytes, stream_bytes

Progress = Callable[[float, str], None]
Buffer = bytes | bytearray | mmap.mmap

CHUNK_BYTES = 1024**2  # ~3,700 Kineto events: their decoded objects stay in the CPU caches


@dataclass
class TraceFile:
    """One decoded trace: every event as columns, the top-level metadata, what was repaired."""

    path: TracePath
    columns: RawColumns
    metadata: dict[str, Any]
    labels: Metadata
    n_bytes: int
    warnings: list[str] = field(default_factory=list)

    @property
    def distributed_rank(self) -> int | None:
        info = self.metadata.get("distributedInfo")
        if isinstance(info, dict):
            rank = info.get("rank")
            if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0:
                return rank
        return None


class _ChunkFailed(Exception):
    """A chunk did not decode: fall back to decoding the whole document."""


def _as_list(data: bytes, start: int, end: int) -> bytes:
    """``[`` + the events in data[start:end] without their trailing comma + ``]``."""
    end = data.rfind(b",", start, end)  # the cut follows a comma and whitespace only
    with memoryview(data) as view:
        return b"".join((b"[", view[start:end], b"]"))


def _decode_events_list(
    doc: bytes | bytearray, builder: ColumnBuilder, warnings: list[str]
) -> None:
    try:
        builder.add(schema.EVENTS_DECODER.decode(doc))
        return
    except msgspec.ValidationError:
        pass
    _add_event_by_event(schema.EVENTS_RAW_DECODER.decode(doc), builder, warnings)


def _add_event_by_event(
    raws: list[msgspec.Raw], builder: ColumnBuilder, warnings: list[str]
) -> None:
    """Slow path: decode events one at a time; odd field types are coerced, and entries
    that are not JSON objects are dropped (and counted)."""
    kept: list[schema.Event] = []
    coerced = dropped = 0
    for raw in raws:
        try:
            kept.append(schema.EVENT_DECODER.decode(raw))
            continue
        except msgspec.ValidationError:
            pass
        try:
            kept.append(coerce_loose(schema.LOOSE_EVENT_DECODER.decode(raw)))
            coerced += 1
        except msgspec.ValidationError:
            dropped += 1
    builder.add(kept)
    if coerced:
        warnings.append(f"coerced {coerced} events with null or oddly typed fields")
    if dropped:
        warnings.append(f"dropped {dropped} entries of traceEvents that are not JSON objects")


def _decode_top(doc: Buffer, builder: ColumnBuilder, warnings: list[str]) -> dict[str, Any]:
    """Decode a whole JSON object (or array) trace document; returns the metadata."""
    first = first_byte(doc)
    if first == b"[":
        _decode_events_list(bytes(doc), builder, warnings)
        return {}
    top: schema.Top | schema.TopRaw
    try:
        top = schema.TOP_DECODER.decode(doc)
        builder.add(top.traceEvents)
    except msgspec.ValidationError:
        top = _decode_top_raw(doc)
        _add_event_by_event(top.traceEvents, builder, warnings)
    top.traceEvents = []
    return {k: getattr(top, k) for k in schema.METADATA_FIELDS if getattr(top, k) is not None}


def _decode_top_raw(doc: Buffer) -> schema.TopRaw:
    try:
        return schema.TOP_RAW_DECODER.decode(doc)
    except msgspec.ValidationError as exc:
        raise _ShapeError(_describe_shape(doc, str(exc))) from None


class _ShapeError(Exception):
    """Valid JSON that is not a trace; the message says what it is instead."""


def _describe_shape(doc: Buffer, detail: str) -> str:
    try:
        keys = list(schema.KEYS_DECODER.decode(doc))
    except (msgspec.DecodeError, msgspec.ValidationError):
        return f"valid JSON but not a trace object ({detail})"
    if "traceEvents" not in keys:
        shown = ", ".join(repr(k) for k in keys[:8]) + (", ..." if len(keys) > 8 else "")
        return f"not a torch.profiler trace: no 'traceEvents' key (keys found: [{shown}])"
    return f"'traceEvents' is not a list of events ({detail})"


def _decode_chunked(
    stream: ByteStream, builder: ColumnBuilder, warnings: list[str], progress: Progress | None
) -> dict[str, Any] | bytes:
    """Decode the streamed pieces (module doc): the metadata, or the whole document's bytes
    when it is not cut (a small file, not an object); ``_ChunkFailed`` when a piece fails."""
    head = b""
    n_pieces = 0
    try:
        for kind, piece in cut_stream(stream, CHUNK_BYTES):
            if kind == "whole":
                return piece
            if kind == "head":
                _check_head(piece)
                head = piece
            elif kind == "middle":
                _decode_events_list(_as_list(piece, 0, len(piece)), builder, warnings)
                n_pieces += 1
                if progress is not None:
                    progress(0.7 * stream.fraction_read(), f"decoded {n_pieces} chunks")
            elif piece.find(b'"traceEvents"') != -1:  # the tail holds a second key
                raise _ChunkFailed("traceEvents is not one list around the cuts")
            else:
                return _decode_top(head + piece, builder, warnings)
    except (msgspec.DecodeError, msgspec.ValidationError, _ShapeError) as exc:
        raise _ChunkFailed(str(exc)) from None
    raise _ChunkFailed("the stream ended without a tail")


_LIST_OPEN = re.compile(rb'"traceEvents"\s*:\s*\[')


def _check_head(head: bytes) -> None:
    """Raise unless the head up to the first cut opens the list of the first
    ``traceEvents`` key, as in a whole decode (with the tail holding no other key, checked
    by the caller): a second ``traceEvents`` key (the last one wins) or event-like objects
    under another key would otherwise be read as events. Each middle chunk decodes as a
    list, so the chunks lie in one list."""
    opened = _LIST_OPEN.match(head, head.find(b'"traceEvents"'))
    if opened is None:
        raise _ChunkFailed("traceEvents is not one list around the cuts")
    schema.EVENTS_RAW_DECODER.decode(_as_list(head, opened.end(), len(head)))


def read_trace(path: str | TracePath, progress: Progress | None = None) -> TraceFile:
    """Decode one trace (``.json`` or ``.json.gz``, a local path or a ``RemoteFile``) into
    columns; raises TraceError."""
    path = path if isinstance(path, RemoteFile) else Path(path)
    if progress is not None:
        progress(0.0, f"reading {path.name}")
    stream = stream_bytes(path)
    if progress is not None and stream.gzip:
        progress(0.0, f"decompressing {path.name}")
    builder, warnings = ColumnBuilder(), list[str]()
    try:
        found = _decode_chunked(stream, builder, warnings, progress)
    except _ChunkFailed:
        return _read_whole(path, read_bytes(path), progress)
    except RecursionError:
        raise TraceError(path, "JSON nested too deeply to be a trace") from None
    finally:
        stream.close()
    if isinstance(found, bytes):
        return _read_whole(path, found, progress)
    columns = builder.finish()
    return TraceFile(path, columns, found, builder.metadata, stream.n_bytes, warnings)


def _read_whole(path: TracePath, data: Buffer, progress: Progress | None) -> TraceFile:
    """Decode the whole document in one piece, with repairs (module doc)."""
    n_bytes = len(data)
    first = first_byte(data)
    if first not in (b"{", b"["):
        shown = bytes(data[:16])
        raise TraceError(path, f"not JSON: starts with {shown!r} (binary file? wrong path?)")
    if bytes(data[:3]) == b"\xef\xbb\xbf":  # a UTF-8 byte order mark (Windows tools)
        unmarked = bytes(data[3:])
        if isinstance(data, mmap.mmap):
            data.close()
        data = unmarked
    try:
        builder, warnings, metadata = _decode_all(path, data)
    except RecursionError:
        raise TraceError(path, "JSON nested too deeply to be a trace") from None
    except _ShapeError as exc:
        raise TraceError(path, str(exc)) from None
    finally:
        if isinstance(data, mmap.mmap):
            try:
                data.close()
            except BufferError:  # a decoded view still points into the map; GC closes it
                pass
    if progress is not None:
        progress(0.7, f"decoded {path.name}")
    columns = builder.finish()
    return TraceFile(path, columns, metadata, builder.metadata, n_bytes, warnings)


def _decode_all(path: TracePath, data: Buffer) -> tuple[ColumnBuilder, list[str], dict[str, Any]]:
    warnings: list[str] = []
    builder = ColumnBuilder()
    try:
        return builder, warnings, _decode_top(data, builder, warnings)
    except msgspec.DecodeError as exc:
        error = str(exc)
    builder, warnings = ColumnBuilder(), []
    metadata = decode_with_repairs(path, data, builder, warnings, error, _decode_top)
    return builder, warnings, metadata
