"""One JSON list of trace events (a chunk of the stream, or a whole document's
``traceEvents``) as a ``Chunk`` of columns: msgspec's typed decode, and event by event when
that fails, so odd field types are coerced and entries that are not objects dropped (and
counted in the chunk's warnings). Here and in the decode helper's process (``helper.py``)."""

from __future__ import annotations

import msgspec

from autoprof.analysis.loader import schema
from autoprof.analysis.loader.columns import Chunk, ColumnBuilder, MemoryArgsNeeded
from autoprof.analysis.loader.loose_events import coerce_loose

CHUNK_BYTES = 1024**2  # ~3,700 Kineto events: their decoded objects stay in the CPU caches


_TAIL_BYTES = 256  # the cut follows a comma and whitespace only: the comma lies in these


def as_list(piece: bytes | memoryview, start: int = 0) -> bytes:
    """``[`` + the events of ``piece[start:]`` (which ends at a cut) without their trailing
    comma + ``]``: one copy of the events (``piece`` may be a view of a block)."""
    end = _last_comma(piece, start)
    with memoryview(piece) as view:
        return b"".join((b"[", view[start:end], b"]"))


def _last_comma(piece: bytes | memoryview, start: int) -> int:
    """``piece.rfind(b",", start)``, looked for in the last ``_TAIL_BYTES`` first (a
    memoryview has no ``rfind``: only those bytes are copied)."""
    near = max(start, len(piece) - _TAIL_BYTES)
    found = bytes(piece[near:]).rfind(b",")
    if found != -1:
        return near + found
    found = bytes(piece[start:near]).rfind(b",")
    return start + found if found != -1 else -1


def decode_chunk(doc: bytes | bytearray, builder: ColumnBuilder) -> Chunk:
    """The events of ``doc`` (a JSON list) encoded by ``builder``; raises msgspec.DecodeError
    when ``doc`` is not JSON.

    Decoded with ``schema.LeanArgs`` (no ``[memory]`` fields: faster) until a chunk holds a
    ``[memory]`` event; that chunk and every one after it are decoded with ``schema.Args``
    (a trace recorded with profile_memory has them all along). The two differ only in the
    six ``[memory]`` keys of ``args``, read for ``[memory]`` events only: a value of the
    wrong type there on another event (Kineto writes none) passes unread here, where
    ``Args`` would send the chunk to the per-event path."""
    try:
        if builder.lean_args:
            try:
                return builder.encode(schema.LEAN_EVENTS_DECODER.decode(doc), [])
            except MemoryArgsNeeded:
                builder.lean_args = False
        return builder.encode(schema.EVENTS_DECODER.decode(doc), [])
    except msgspec.ValidationError:
        pass
    return encode_event_by_event(schema.EVENTS_RAW_DECODER.decode(doc), builder)


def encode_event_by_event(raws: list[msgspec.Raw], builder: ColumnBuilder) -> Chunk:
    """Slow path: decode events one at a time (module doc)."""
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
    warnings = []
    if coerced:
        warnings.append(f"coerced {coerced} events with null or oddly typed fields")
    if dropped:
        warnings.append(f"dropped {dropped} entries of traceEvents that are not JSON objects")
    return builder.encode(kept, warnings)
