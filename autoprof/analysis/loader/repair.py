"""What the loader does with a trace whose whole document does not decode: repair what can
be repaired (control characters, invalid UTF-8, NaN and Infinity literals, a JSON Array
Format trace without its closing ``]``), each repair named in the load warnings, or raise a
``TraceError`` that says what is wrong with the file."""

from __future__ import annotations

import json
import mmap
import re
from collections.abc import Callable
from typing import Any

import msgspec

from autoprof.analysis.loader.columns import ColumnBuilder
from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.remote import TracePath

Buffer = bytes | bytearray | mmap.mmap
# decode.py's whole-document decoder: (document, builder, warnings) -> metadata
DecodeTop = Callable[[Buffer, ColumnBuilder, list[str]], dict[str, Any]]
_STDLIB_FALLBACK_MAX_BYTES = 64 * 1024**2


def first_byte(doc: Buffer) -> bytes:
    """The document's first byte past whitespace and a byte order mark."""
    limit = min(len(doc), 4096)
    head = bytes(doc[:limit]).lstrip(b" \t\r\n\xef\xbb\xbf")
    return head[:1]


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


def decode_with_repairs(
    path: TracePath, data: Buffer, builder: ColumnBuilder, warnings: list[str], error: str,
    decode_top: DecodeTop,
) -> dict[str, Any]:
    """The whole document failed to decode: repair what can be repaired, or explain."""
    if "truncated" in error:
        closed = _closed_array(data)
        if closed is not None:  # the JSON Array Format allows leaving out the final "]"
            try:
                return decode_top(closed, builder, warnings)
            except msgspec.DecodeError:
                pass  # cut inside an event: truncated after all
        raise TraceError(path, "truncated JSON: the file ends before the trace does "
                               "(export interrupted or file still being written?)")
    fixed, notes = _repair(data)
    if notes:
        try:
            meta = decode_top(fixed, builder, warnings)
            warnings.append(f"replaced {notes} in names")
            return meta
        except msgspec.DecodeError as exc:
            error = str(exc)
    if len(fixed) <= _STDLIB_FALLBACK_MAX_BYTES and "invalid character" in error:
        meta = _decode_stdlib(fixed, builder, warnings, decode_top)
        if isinstance(meta, dict):
            return meta
    elif "invalid character" in error:  # too big for Python's json: NaN -> null in place
        try:
            meta = decode_top(_null_literals(fixed), builder, warnings)
            warnings.append(_NON_STANDARD_WARNING)
            return meta
        except msgspec.DecodeError:
            pass
    raise TraceError(path, f"not valid JSON ({error})")


def _closed_array(data: Buffer) -> bytes | None:
    """A JSON Array Format trace without its closing ``]`` (trailing comma allowed), closed;
    None for anything else."""
    if first_byte(data) != b"[":
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


def _decode_stdlib(
    data: bytes, builder: ColumnBuilder, warnings: list[str], decode_top: DecodeTop
) -> Any:
    """Python's json accepts NaN/Infinity, which msgspec (rightly) rejects; small files only."""
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        return None
    warnings.append(_NON_STANDARD_WARNING)
    return decode_top(msgspec.json.encode(_finite(obj)), builder, warnings)


def _finite(obj: Any) -> Any:
    """Replace NaN/inf floats with None so the document re-encodes as strict JSON."""
    if isinstance(obj, float):
        return obj if obj == obj and abs(obj) != float("inf") else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj
