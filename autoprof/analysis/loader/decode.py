"""``read_trace(path) -> TraceFile``: a Kineto JSON trace as columns plus its metadata.

Fast path, streamed: the file's decoded bytes arrive in blocks (``source.stream_bytes``:
plain files read, gzip inflated, block by block) and are cut at event boundaries about every
``CHUNK_BYTES`` (``chunks.cut_stream``); each chunk decodes as a JSON list through msgspec
typed structs and becomes numpy columns before the next is read (the head's events first, so
the columns keep the file's order), and the head's top-level keys decode with the tail (the
last events and the keys after the list) as one document at the end. So the file is never
in memory whole, only one chunk of Python objects is alive at a time, and peak memory is
about the columns plus a few chunks. A large trace's second part is decoded meanwhile by a
helper process (``helper.py``). If any piece fails to decode, the file is read again and
decoded in one piece (same result, more memory), so a wrong cut can cost time but never
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
from autoprof.analysis.loader.chunk_decode import (
    CHUNK_BYTES,
    as_list,
    decode_chunk,
    encode_event_by_event,
)
from autoprof.analysis.loader.chunks import cut_stream
from autoprof.analysis.loader.columns import ColumnBuilder, Metadata, RawColumns
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.helper import Helper, NoHelper, helper_for
from autoprof.analysis.loader.remote import RemoteFile, TracePath
from autoprof.analysis.loader.repair import decode_with_repairs, first_byte
from autoprof.analysis.loader.source import ByteStream, read_bytes, stream_bytes

Progress = Callable[[float, str], None]
Buffer = bytes | bytearray | mmap.mmap


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


def _decode_top(doc: Buffer, builder: ColumnBuilder, warnings: list[str]) -> dict[str, Any]:
    """Decode a whole JSON object (or array) trace document; returns the metadata."""
    first = first_byte(doc)
    if first == b"[":
        builder.append(decode_chunk(bytes(doc), builder))
        return {}
    top: schema.Top | schema.TopRaw
    try:
        top = schema.TOP_DECODER.decode(doc)
        builder.append(builder.encode(top.traceEvents, []))
    except msgspec.ValidationError:
        top = _decode_top_raw(doc)
        builder.append(encode_event_by_event(top.traceEvents, builder))
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
    stream: ByteStream, builder: ColumnBuilder, warnings: list[str], progress: Progress | None,
    helper: Helper | NoHelper,
) -> dict[str, Any] | bytes:
    """Decode the streamed pieces (module doc): the metadata, or the whole document's bytes
    when it is not cut (a small file, not an object); ``_ChunkFailed`` when a piece fails.
    With a helper, this process reads ``stream`` up to the split's cut and the helper
    decodes the rest (``helper.py``)."""
    head = b""
    n_pieces = 0
    try:
        for kind, cut_piece in cut_stream(helper.first_part(stream), CHUNK_BYTES):
            if kind == "middle":  # a view of the block it lies in
                builder.append(decode_chunk(as_list(cut_piece), builder))
                n_pieces += 1
                if progress is not None:
                    progress(0.7 * stream.fraction_read(), f"decoded {n_pieces} chunks")
                continue
            piece = bytes(cut_piece)  # the other pieces are bytes already: no copy
            if kind == "whole":
                return helper.whole(piece)
            if kind == "head":  # its events first: the columns keep the file's order
                opened = _list_start(piece)
                builder.append(decode_chunk(as_list(piece, opened), builder))
                head = piece[:opened]
            else:
                tail = helper.complete(piece, builder)
                if tail.find(b'"traceEvents"') != -1:  # the tail holds a second key
                    raise _ChunkFailed("traceEvents is not one list around the cuts")
                return _decode_top(head + tail, builder, warnings)
    except (msgspec.DecodeError, msgspec.ValidationError, _ShapeError) as exc:
        raise _ChunkFailed(str(exc)) from None
    raise _ChunkFailed("the stream ended without a tail")


_LIST_OPEN = re.compile(rb'"traceEvents"\s*:\s*\[')


def _list_start(head: bytes) -> int:
    """Where the first event lies in the head (the bytes up to the first cut): just after
    the ``[`` that opens the first ``traceEvents`` key's list, as in a whole decode (with
    the tail holding no other key, checked by the caller); ``_ChunkFailed`` otherwise: a
    second ``traceEvents`` key (the last one wins) or event-like objects under another key
    would otherwise be read as events. Each middle chunk decodes as a list, so the chunks
    lie in one list."""
    opened = _LIST_OPEN.match(head, head.find(b'"traceEvents"'))
    if opened is None:
        raise _ChunkFailed("traceEvents is not one list around the cuts")
    return opened.end()


def read_trace(path: str | TracePath, progress: Progress | None = None) -> TraceFile:
    """Decode one trace (``.json`` or ``.json.gz``, a local path or a ``RemoteFile``) into
    columns; raises TraceError."""
    path = path if isinstance(path, RemoteFile) else Path(path)
    if progress is not None:
        progress(0.0, f"reading {path.name}")
    stream = stream_bytes(path)
    if progress is not None and stream.gzip:
        progress(0.0, f"decompressing {path.name}")
    helper = helper_for(path, stream)  # this process reads up to a cut, a helper the rest
    builder, warnings = ColumnBuilder(), list[str]()
    found: dict[str, Any] | bytes | None = None
    try:
        found = _decode_chunked(stream, builder, warnings, progress, helper)
    except _ChunkFailed:
        pass
    except RecursionError:
        raise TraceError(path, "JSON nested too deeply to be a trace") from None
    finally:
        stream.close()
        helper.close()
    if found is None:
        return _read_whole(path, read_bytes(path), progress)
    if isinstance(found, bytes):
        return _read_whole(path, found, progress)
    columns = builder.finish()
    return TraceFile(path, columns, found, builder.metadata,
                     helper.decoded_bytes(stream.n_bytes), builder.warnings + warnings)


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
    return TraceFile(path, columns, metadata, builder.metadata, n_bytes,
                     builder.warnings + warnings)


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
