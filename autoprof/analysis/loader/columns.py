"""Turning decoded events into numpy columns, one chunk at a time.

Strings (names, categories, input dims) are interned: each column stores int32 codes into
one list of distinct values, so 1M events with a few hundred distinct names cost 4 MB, not
hundreds of MB of repeated Python strings.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from autoprof.analysis.loader.column_store import ColumnStore
from autoprof.analysis.loader.event_keys import EventKeys
from autoprof.analysis.loader.memory_columns import MEMORY_EVENT, MemoryColumns, memory_part
from autoprof.analysis.loader.op_inputs import OpInputs
from autoprof.analysis.loader.schema import Args, LeanEvent
from autoprof.analysis.loader.vocabulary import GPU_CATS, RUNTIME_CATS

KIND_X, KIND_FLOW_START, KIND_FLOW_END, KIND_META, KIND_OTHER = 0, 1, 2, 3, 4
_KIND_BY_PH = {"X": KIND_X, "s": KIND_FLOW_START, "f": KIND_FLOW_END, "M": KIND_META}

# categories that never carry input shapes / a device / a correlation id
_NO_SHAPES_CATS = GPU_CATS | RUNTIME_CATS | {"ac2g", "trace"}
_HOST_CATS = RUNTIME_CATS | {"cpu_op", "user_annotation", "python_function", "trace"}
_NO_CORRELATION_CATS = frozenset({"cpu_op", "user_annotation", "python_function", "trace"})

INT_COLUMNS = ("pid", "tid", "correlation", "external_id", "seq_nr", "device", "stream",
               "flow_id")
FLOAT_COLUMNS = ("ts", "dur", "flops", "bytes")

IntArray = npt.NDArray[np.int64]
_ID_LIMIT = 2**62  # an int id outside (-2**62, 2**62) reads as none (-1)
FloatArray = npt.NDArray[np.float64]


def stable_negative_id(text: str) -> int:
    """A non-integer pid/tid/flow id as a stable negative int64 (same text, same id)."""
    return -1 - zlib.crc32(text.encode("utf-8", "surrogatepass"))


def id_or_none(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, str):
        return stable_negative_id(value)
    if isinstance(value, int) and -_ID_LIMIT < value < _ID_LIMIT:
        return value
    return None


class _Codes(dict[Any, int]):
    """value -> dense code; a new value gets the next code on first lookup."""

    def __missing__(self, key: Any) -> int:
        code = self[key] = len(self)
        return code


class Interner:
    """Assigns each distinct value a dense int32 code, in order of first appearance.

    Values are looked up in ``codes`` inside the list comprehension that reads them (as
    ``event_keys.py`` does with each event's key tuple): one pass, no Python frame per event
    (only per distinct value), ~35% faster than ``map(codes.__getitem__, ...)`` over a list
    read first, itself ~3x faster than pandas.factorize on object arrays. The ph, cat and
    name interners are filled per distinct key (``EventKeys``), in the same order.
    """

    def __init__(self, first: Any = "") -> None:
        self.codes = _Codes()
        self.codes[first] = 0

    def encode(self, values: Iterable[Any], count: int) -> npt.NDArray[np.int32]:
        return np.fromiter(map(self.codes.__getitem__, values), dtype=np.int32, count=count)

    def encode_raw(self, raws: list[msgspec.Raw]) -> npt.NDArray[np.int32]:
        """Codes of the texts of ``raws`` (as bytes). They are joined with NUL bytes and
        split again, one C call each instead of a ``bytes()`` call per value; a value that
        holds a NUL itself (no JSON has one outside a string, msgspec none inside) would
        split into more parts than there are values, and is then read one by one."""
        parts = b"\0".join(raws).split(b"\0") if raws else []
        if len(parts) != len(raws):
            parts = list(map(bytes, raws))
        return self.encode(parts, len(parts))

    def values(self) -> list[Any]:
        return list(self.codes)


# Each field is read by a list comprehension naming the attribute (``[e.ts for e in
# events]``), then made an array by ``np.fromiter``: ~20% faster than ``map(attrgetter(...))``
# (no call per event) and ~45% for the args objects alone.


def _floats(values: list[Any]) -> FloatArray:
    return np.fromiter(values, dtype=np.float64, count=len(values))


def _pick(objects: Sequence[Any], rows: npt.NDArray[np.intp]) -> list[Any]:
    return list(map(objects.__getitem__, rows.tolist()))


def _spread(values: IntArray, rows: npt.NDArray[np.intp], n: int) -> IntArray:
    """An id column of length n: ``values`` at ``rows``, -1 elsewhere."""
    out = np.full(n, -1, dtype=np.int64)
    if len(rows):
        out[rows] = values
    return out


def _ids(values: list[Any]) -> IntArray:
    """int64 ids; a string id becomes a stable negative; out-of-range ints become -1.

    A chunk's ids are ints but for a few (Kineto's ``Traces`` span events have string pids
    and tids): those few are read by ``id_or_none`` and the rest still by ``np.fromiter``,
    not every value of the chunk through a Python call (a fifth of a GPU trace's load)."""
    try:
        return np.fromiter(values, dtype=np.int64, count=len(values))
    except (TypeError, ValueError, OverflowError):
        pass
    odd = [i for i, v in enumerate(values) if v.__class__ is not int]
    patched = list(values)
    for i in odd:
        patched[i] = 0
    try:
        out = np.fromiter(patched, dtype=np.int64, count=len(patched))
    except OverflowError:  # an int beyond int64: every value through id_or_none
        found = [id_or_none(v) for v in values]
        return np.array([-1 if v is None else v for v in found], dtype=np.int64)
    out[(out <= -_ID_LIMIT) | (out >= _ID_LIMIT)] = -1
    for i in odd:
        found_id = id_or_none(values[i])
        out[i] = -1 if found_id is None else found_id
    return out


def _dims_text(raw: bytes) -> str:
    """Input dims as Kineto writes them (``[[64, 64], []]``), whatever the file's spacing."""
    if not raw:
        return ""
    try:
        return json.dumps(msgspec.json.decode(raw), ensure_ascii=False)
    except (msgspec.DecodeError, ValueError, TypeError):
        return raw.decode("utf-8", "replace")


@dataclass
class Metadata:
    """What the ``M`` events say: labels and names per process/thread."""

    process_labels: dict[int, str] = field(default_factory=dict)
    process_names: dict[int, str] = field(default_factory=dict)
    thread_names: dict[tuple[int, int], str] = field(default_factory=dict)


# each interned column -> the ColumnBuilder's interner of its values
INTERNED = {"ph": "phs", "cat": "cats", "name": "names", "input_dims": "dims",
            "input_types": "types", "input_values": "values"}


class MemoryArgsNeeded(Exception):
    """Events decoded with ``LeanArgs`` hold a ``[memory]`` event: decode them with ``Args``."""


@dataclass
class Chunk:
    """One chunk of events as columns, its interned columns in the codes of the builder that
    encoded it; ``metadata``: its ``M`` events as (name, pid, tid, args.name, args.labels);
    ``warnings``: what decoding it coerced or dropped."""

    columns: dict[str, np.ndarray]
    memory: dict[str, np.ndarray] | None = None
    metadata: list[tuple[Any, ...]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class ColumnBuilder:
    """Accumulates chunks of decoded events into columns (in file order: the order they are
    appended in)."""

    names: Interner = field(default_factory=Interner)
    cats: Interner = field(default_factory=Interner)
    dims: Interner = field(default_factory=lambda: Interner(b""))
    types: Interner = field(default_factory=lambda: Interner(b""))
    values: Interner = field(default_factory=lambda: Interner(b""))
    phs: Interner = field(default_factory=Interner)
    keys: EventKeys = field(default_factory=EventKeys)  # (ph, cat, name, pid, tid) codes
    op_inputs: OpInputs = field(default_factory=OpInputs)  # (dims, types, values) codes
    lean_args: bool = True  # decode with LeanArgs until a chunk holds [memory] events
    chunks: list[Chunk] = field(default_factory=list)  # their columns moved to ``store``
    store: ColumnStore = field(default_factory=ColumnStore)
    metadata: Metadata = field(default_factory=Metadata)
    warnings: list[str] = field(default_factory=list)  # the chunks', in file order: finish()

    def _cat_flags(self, wanted: frozenset[str]) -> npt.NDArray[np.bool_]:
        return np.array([str(c).lower() in wanted for c in self.cats.codes], dtype=bool)

    def _kinds(self) -> npt.NDArray[np.int8]:
        return np.array(
            [_KIND_BY_PH.get(p, KIND_OTHER) if isinstance(p, str) else KIND_OTHER
             for p in self.phs.codes],
            dtype=np.int8,
        )

    def append(self, chunk: Chunk) -> None:
        """Add ``chunk`` after the chunks before it; its columns move into ``store``."""
        self.store.append(chunk.columns)
        self.chunks.append(chunk)

    def interned(self, name: str) -> Interner:
        """The interner of an ``INTERNED`` column's values."""
        found: Interner = getattr(self, INTERNED[name])
        return found

    def encode(self, events: Sequence[LeanEvent], warnings: list[str]) -> Chunk:
        """One chunk of decoded events as columns.

        Fields every event needs are read for all; the rest only for the events that can
        carry them (flow ids for flows, input dims and flops for CPU ops, device, stream and
        bytes for GPU events, correlation for launches and GPU events): each skipped pass over
        the chunk saves ~5% of the decode time. ``MemoryArgsNeeded``: a ``[memory]`` event's
        args lack their fields (``LeanArgs``).
        """
        n = len(events)
        if not n:
            return Chunk({}, warnings=warnings)
        ph_codes, cat_codes, name_codes, pid, tid = self.keys.encode(
            events, self.phs.codes, self.cats.codes, self.names.codes, _ids)
        mem_code = self.names.codes.get(MEMORY_EVENT)
        mem = np.flatnonzero(name_codes == mem_code) if mem_code is not None else None
        if mem is not None and len(mem) and not isinstance(events[int(mem[0])].args, Args):
            raise MemoryArgsNeeded
        kind = self._kinds()[ph_codes]
        is_x = kind == KIND_X
        args = [e.args for e in events]
        chunk: dict[str, np.ndarray] = {
            "ph": ph_codes,
            "cat": cat_codes,
            "name": name_codes,
            "pid": pid,
            "tid": tid,
            "ts": _floats([e.ts for e in events]),
            "dur": _floats([e.dur for e in events]),
            "external_id": _ids([a.external_id for a in args]),
        }
        flows = np.flatnonzero((kind == KIND_FLOW_START) | (kind == KIND_FLOW_END))
        chunk["flow_id"] = _spread(_ids([e.id for e in _pick(events, flows)]), flows, n)
        op_rows = np.flatnonzero(is_x & ~self._cat_flags(_NO_SHAPES_CATS)[cat_codes])
        op_args = _pick(args, op_rows)
        chunk["seq_nr"] = _spread(_ids([a.seq_nr for a in op_args]), op_rows, n)
        chunk["flops"] = np.full(n, np.nan)
        chunk["flops"][op_rows] = _floats([a.flops for a in op_args])
        inputs = self.op_inputs.encode(op_args, self.dims, self.types, self.values)
        for key, codes in zip(("input_dims", "input_types", "input_values"), inputs,
                              strict=True):
            chunk[key] = np.zeros(n, dtype=np.int32)  # an absent one: bytes(Raw()) == b""
            chunk[key][op_rows] = codes
        device_rows = np.flatnonzero(is_x & ~self._cat_flags(_HOST_CATS)[cat_codes])
        device_args = _pick(args, device_rows)
        chunk["device"] = _spread(_ids([a.device for a in device_args]), device_rows, n)
        chunk["bytes"] = np.full(n, np.nan)
        chunk["bytes"][device_rows] = _floats([a.copy_bytes for a in device_args])
        chunk["stream"] = _spread(_ids([a.stream for a in device_args]), device_rows, n)
        corr_rows = np.flatnonzero(is_x & ~self._cat_flags(_NO_CORRELATION_CATS)[cat_codes])
        chunk["correlation"] = _spread(
            _ids([a.correlation for a in _pick(args, corr_rows)]), corr_rows, n)
        out = Chunk(chunk, warnings=warnings)
        if mem is not None:
            out.memory = memory_part(_pick(events, mem), chunk["pid"][mem], chunk["tid"][mem])
        meta_code = self.phs.codes.get("M")
        if meta_code is not None:
            out.metadata = [_metadata(events[i])
                            for i in np.flatnonzero(ph_codes == meta_code).tolist()]
        return out

    def _add_metadata(self, name: Any, pid: Any, tid: Any, arg_name: Any, labels: Any) -> None:
        pid = id_or_none(pid)
        tid = id_or_none(tid)
        if pid is None:
            return
        if name == "process_labels" and isinstance(labels, str):
            self.metadata.process_labels[pid] = labels
        elif name == "process_name" and isinstance(arg_name, str):
            self.metadata.process_names[pid] = arg_name
        elif name == "thread_name" and isinstance(arg_name, str) and tid is not None:
            self.metadata.thread_names[(pid, tid)] = arg_name

    def finish(self) -> RawColumns:
        whole = merge_chunks(self.chunks)  # their memory events, metadata and warnings
        self.chunks.clear()
        for entry in whole.metadata:
            self._add_metadata(*entry)
        self.warnings.extend(whole.warnings)
        empty = np.empty(0, dtype=np.int64)
        stored = self.store.take()
        merged = {key: stored.get(key, empty) for key in CHUNK_KEYS}
        # the "" code of ph/names/cats is 0; input dims use b"" (-> "") and None (-> "").
        kind_of_code = self._kinds()
        dims_text = [_dims_text(bytes(d)) for d in self.dims.values()]
        types_text = [_dims_text(bytes(t)) for t in self.types.values()]
        values_text = [_dims_text(bytes(v)) for v in self.values.values()]
        return RawColumns(
            kind=kind_of_code[merged["ph"]] if len(merged["ph"]) else np.empty(0, np.int8),
            name=merged["name"].astype(np.int32, copy=False),
            cat=merged["cat"].astype(np.int32, copy=False),
            input_dims=merged["input_dims"].astype(np.int32, copy=False),
            input_types=merged["input_types"].astype(np.int32, copy=False),
            input_values=merged["input_values"].astype(np.int32, copy=False),
            pid=merged["pid"],
            tid=merged["tid"],
            ts=merged["ts"].astype(np.float64, copy=False),
            dur=merged["dur"].astype(np.float64, copy=False),
            flops=merged["flops"].astype(np.float64, copy=False),
            bytes=merged["bytes"].astype(np.float64, copy=False),
            correlation=merged["correlation"],
            external_id=merged["external_id"],
            seq_nr=merged["seq_nr"],
            device=merged["device"],
            stream=merged["stream"],
            flow_id=merged["flow_id"],
            names=[str(v) for v in self.names.values()],
            cats=[str(v) for v in self.cats.values()],
            dims=dims_text,
            types=types_text,
            values=values_text,
            memory=MemoryColumns() if whole.memory is None else MemoryColumns(**whole.memory),
        )


CHUNK_KEYS = ("ph", "name", "cat", "input_dims", "input_types", "input_values", *INT_COLUMNS,
              *FLOAT_COLUMNS)


def merge_chunks(chunks: list[Chunk]) -> Chunk:
    """One chunk holding ``chunks`` in order. Their columns are taken (popped) as they are
    concatenated, so the chunks and the whole columns are never in memory twice over."""
    full = [c for c in chunks if c.columns]
    columns: dict[str, np.ndarray] = {}
    for key in CHUNK_KEYS if full else ():
        parts = [c.columns.pop(key) for c in full]
        columns[key] = np.concatenate(parts)
        del parts
    memory = [c.memory for c in chunks if c.memory is not None]
    return Chunk(
        columns,
        memory={k: np.concatenate([p[k] for p in memory]) for k in memory[0]} if memory
        else None,
        metadata=[entry for c in chunks for entry in c.metadata],
        warnings=[w for c in chunks for w in c.warnings],
    )


def _metadata(event: LeanEvent) -> tuple[Any, ...]:
    return (event.name, event.pid, event.tid, event.args.name, event.args.labels)


@dataclass
class RawColumns:
    """Every ``traceEvents`` entry as columns (``kind``: 0 X, 1 flow start, 2 flow end,
    3 metadata, 4 other). ``name``/``cat``/``input_dims``/``input_types``/``input_values``
    are codes into ``names``/``cats``/``dims``/``types``/``values``. Missing numbers are
    NaN (floats) or -1 (ints)."""

    kind: npt.NDArray[np.int8]
    name: npt.NDArray[np.int32]
    cat: npt.NDArray[np.int32]
    input_dims: npt.NDArray[np.int32]
    input_types: npt.NDArray[np.int32]
    input_values: npt.NDArray[np.int32]
    pid: IntArray
    tid: IntArray
    ts: FloatArray
    dur: FloatArray
    flops: FloatArray
    bytes: FloatArray  # args.bytes of memcpy / memset events
    correlation: IntArray
    external_id: IntArray
    seq_nr: IntArray  # autograd's sequence number of a CPU op, -1 where it has none
    device: IntArray
    stream: IntArray
    flow_id: IntArray
    names: list[str]
    cats: list[str]
    dims: list[str]
    types: list[str]
    values: list[str]
    memory: MemoryColumns = field(default_factory=MemoryColumns)  # the [memory] events

    def __len__(self) -> int:
        return len(self.kind)
