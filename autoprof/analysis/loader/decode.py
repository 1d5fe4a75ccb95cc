"""``read_trace(path) -> TraceFile``: a Kineto JSON trace as columns plus its metadata.

Fast path: ``}``, ``,``, ``{`` and a trace event's first key (``"ph"``, ``"name"``, ...)
with only whitespace between them is a candidate boundary between two ``traceEvents``
entries, in Kineto's indented layout and in compact one-line JSON alike. The file is cut at
such boundaries every ~1 MiB; the head and tail (with all top-level metadata) decode as one
document and each middle chunk as a JSON list, through msgspec typed structs, and each chunk
becomes numpy columns before the next is decoded, so only one chunk of Python objects is
alive at a time. If any chunk fails to decode, the whole file is decoded in one piece
instead (same result, more memory), so a wrong cut can cost time but never change the
answer. (Inside a JSON string every quote is escaped, so a cut never falls there; one in a
list of objects nested in an event's args can, and leaves a chunk that cannot decode.)
"""

from __future__ import annotations

import json
import mmap
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from autoprof.analysis.loader import schema
from autoprof.analysis.loader.columns import ColumnBuilder, Metadata, RawColumns, coerce_loose
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.source import read_bytes

Progress = Callable[[float, str], None]
Buffer = bytes | bytearray | mmap.mmap

CHUNK_BYTES = 1024**2  # ~3,700 Kineto events: their decoded objects stay in the CPU caches
_STDLIB_FALLBACK_MAX_BYTES = 64 * 1024**2


@dataclass
class TraceFile:
    """One decoded trace: every event as columns, the top-level metadata, what was repaired."""

    path: Path
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


# "}" "," "{" between two traceEvents entries, the "{" followed by a trace event's key; the
# whitespace covers Kineto's one-key-per-line layout and compact one-line JSON alike
_EVENT_START = re.compile(rb'\}\s*,\s*(\{)\s*"(?:ph|cat|name|pid|tid|ts|dur|args|id)"')
_SEARCH_WINDOW_BYTES = 1024**2


def _boundaries(data: Buffer, start: int, end: int) -> list[int]:
    """Offsets (each at a ``{`` that starts an event) roughly every CHUNK_BYTES."""
    cuts: list[int] = []
    target = start + CHUNK_BYTES
    while target < end - CHUNK_BYTES // 4:
        found = _EVENT_START.search(data, target, min(end, target + _SEARCH_WINDOW_BYTES))
        if found is None:
            break
        cuts.append(found.start(1))
        target = found.start(1) + CHUNK_BYTES
    return cuts


def _release(data: Buffer, start: int, end: int) -> None:
    """Drop the decoded part of a memory-mapped file from this process's resident memory
    (the pages stay in the OS page cache and read back transparently if touched again)."""
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if not isinstance(data, mmap.mmap) or advice is None:
        return
    first = start - start % mmap.PAGESIZE
    if end - first > mmap.PAGESIZE:
        try:
            data.madvise(advice, first, end - first - (end - first) % mmap.PAGESIZE)
        except (OSError, ValueError):
            pass


def _as_list(data: Buffer, start: int, end: int) -> bytes:
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
    first = _first_byte(doc)
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


def _first_byte(doc: Buffer) -> bytes:
    limit = min(len(doc), 4096)
    head = bytes(doc[:limit]).lstrip(b" \t\r\n\xef\xbb\xbf")
    return head[:1]


def _decode_chunked(
    data: Buffer, builder: ColumnBuilder, warnings: list[str], progress: Progress | None
) -> dict[str, Any]:
    start = data.find(b'"traceEvents"')
    cuts = _boundaries(data, start, len(data)) if start != -1 else []
    if len(cuts) < 2:
        return _decode_top(data, builder, warnings)
    total = len(cuts) + 1
    try:
        _check_cuts(data, start, cuts)
        for i in range(len(cuts) - 1):
            _decode_events_list(_as_list(data, cuts[i], cuts[i + 1]), builder, warnings)
            _release(data, cuts[i], cuts[i + 1])
            if progress is not None:
                progress(0.1 + 0.6 * (i + 1) / total, f"decoded {i + 1}/{total} chunks")
        head_tail = bytes(data[: cuts[0]]) + bytes(data[cuts[-1] :])
        return _decode_top(head_tail, builder, warnings)
    except (msgspec.DecodeError, msgspec.ValidationError, _ShapeError) as exc:
        raise _ChunkFailed(str(exc)) from None


_LIST_OPEN = re.compile(rb'"traceEvents"\s*:\s*\[')


def _check_cuts(data: Buffer, start: int, cuts: list[int]) -> None:
    """Raise unless every cut lies in the list of the only ``traceEvents`` key, as in a whole
    decode: a second ``traceEvents`` key (the last one wins) or event-like objects under
    another key would otherwise be read as events. Each middle chunk decodes as a list, so
    the chunks lie in one list; it is the first key's list when the head up to the first cut
    is that list's opening part, and the tail holds no other ``traceEvents``."""
    opened = _LIST_OPEN.match(data, start)
    if opened is None or data.find(b'"traceEvents"', cuts[-1]) != -1:
        raise _ChunkFailed("traceEvents is not one list around the cuts")
    schema.EVENTS_RAW_DECODER.decode(_as_list(data, opened.end(), cuts[0]))


def _repair(data: Buffer) -> tuple[bytes, str]:
    """Control characters -> spaces, invalid UTF-8 -> U+FFFD. Returns (bytes, what changed)."""
    raw = bytes(data)
    table = bytes(range(256)).replace(bytes(range(32)), b" " * 32)
    fixed = raw.translate(table)
    notes = []
    n_control = sum(raw.count(bytes([c])) for c in range(32) if c not in (9, 10, 13))
    if n_control:
        notes.append(f"{n_control} control characters")
    try:
        fixed.decode("utf-8")
    except UnicodeDecodeError:
        fixed = fixed.decode("utf-8", "replace").encode("utf-8")
        notes.append("invalid UTF-8 bytes")
    return fixed, " and ".join(notes)


def _decode_with_repairs(
    path: Path, data: Buffer, builder: ColumnBuilder, warnings: list[str], error: str
) -> dict[str, Any]:
    """The whole document failed to decode: repair what can be repaired, or explain."""
    if "truncated" in error:
        closed = _closed_array(data)
        if closed is not None:  # the JSON Array Format allows leaving out the final "]"
            try:
                return _decode_top(closed, builder, warnings)
            except msgspec.DecodeError:
                pass  # cut inside an event: truncated after all
        raise TraceError(path, "truncated JSON: the file ends before the trace does "
                               "(export interrupted or file still being written?)")
    fixed, notes = _repair(data)
    if notes:
        try:
            meta = _decode_top(fixed, builder, warnings)
            warnings.append(f"replaced {notes} in names")
            return meta
        except msgspec.DecodeError as exc:
            error = str(exc)
    if len(fixed) <= _STDLIB_FALLBACK_MAX_BYTES and "invalid character" in error:
        meta = _decode_stdlib(fixed, builder, warnings)
        if isinstance(meta, dict):
            return meta
    elif "invalid character" in error:  # too big for Python's json: NaN -> null in place
        try:
            meta = _decode_top(_null_literals(fixed), builder, warnings)
            warnings.append(_NON_STANDARD_WARNING)
            return meta
        except msgspec.DecodeError:
            pass
    raise TraceError(path, f"not valid JSON ({error})")


def _closed_array(data: Buffer) -> bytes | None:
    """A JSON Array Format trace without its closing ``]`` (trailing comma allowed), closed;
    None for anything else."""
    if _first_byte(data) != b"[":
        return None
    body = bytes(data).rstrip(b" \t\r\n")
    if body.endswith(b"]"):
        return None
    return body.rstrip(b",").rstrip(b" \t\r\n") + b"]"


# a JSON string (skipped as it is) or a NaN / Infinity literal outside strings (-> null)
_STRING_OR_LITERAL = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|(-?Infinity|NaN)')
_NON_STANDARD_WARNING = "non-standard JSON (NaN or Infinity literals) read with the slow parser"


def _null_literals(data: bytes) -> bytes:
    """NaN, Infinity and -Infinity outside strings -> null, as Python's json + _finite do."""
    return _STRING_OR_LITERAL.sub(lambda m: b"null" if m.group(1) else m.group(0), data)


def _decode_stdlib(data: bytes, builder: ColumnBuilder, warnings: list[str]) -> Any:
    """Python's json accepts NaN/Infinity, which msgspec (rightly) rejects; small files only."""
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        return None
    warnings.append(_NON_STANDARD_WARNING)
    return _decode_top(msgspec.json.encode(_finite(obj)), builder, warnings)


def _finite(obj: Any) -> Any:
    """Replace NaN/inf floats with None so the document re-encodes as strict JSON."""
    if isinstance(obj, float):
        return obj if obj == obj and abs(obj) != float("inf") else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def read_trace(path: str | Path, progress: Progress | None = None) -> TraceFile:
    """Decode one trace (``.json`` or ``.json.gz``) into columns; raises TraceError."""
    path = Path(path)
    if progress is not None:
        progress(0.0, f"reading {path.name}")
    data = read_bytes(path, progress)
    n_bytes = len(data)
    first = _first_byte(data)
    if first not in (b"{", b"["):
        shown = bytes(data[:16])
        raise TraceError(path, f"not JSON: starts with {shown!r} (binary file? wrong path?)")
    if bytes(data[:3]) == b"\xef\xbb\xbf":  # a UTF-8 byte order mark (Windows tools)
        unmarked = bytes(data[3:])
        if isinstance(data, mmap.mmap):
            data.close()
        data = unmarked
    try:
        builder, warnings, metadata = _decode_all(path, data, progress)
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
    columns = builder.finish()
    return TraceFile(path, columns, metadata, builder.metadata, n_bytes, warnings)


def _decode_all(
    path: Path, data: Buffer, progress: Progress | None
) -> tuple[ColumnBuilder, list[str], dict[str, Any]]:
    warnings: list[str] = []
    builder = ColumnBuilder()
    try:
        try:
            return builder, warnings, _decode_chunked(data, builder, warnings, progress)
        except _ChunkFailed:
            builder, warnings = ColumnBuilder(), []
            return builder, warnings, _decode_top(data, builder, warnings)
    except msgspec.DecodeError as exc:
        error = str(exc)
    builder, warnings = ColumnBuilder(), []
    metadata = _decode_with_repairs(path, data, builder, warnings, error)
    return builder, warnings, metadata
