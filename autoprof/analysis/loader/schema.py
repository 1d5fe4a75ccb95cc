"""msgspec types for the parts of a Kineto trace the loader uses; everything else is skipped.

Decoding into these typed structs materializes only the listed fields, which is what makes
a 1M-event trace load in seconds: json/orjson build every dict, list and string of the file.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

RAW_EMPTY = msgspec.Raw()


class LeanArgs(msgspec.Struct, gc=False, frozen=True):
    """The ``args`` fields the events table uses (unknown keys are skipped), but for those
    of ``[memory]`` events (``Args``). In the order Kineto writes them (a CPU op's, then a
    kernel's, then a launch's): msgspec looks a key up from the field after the last one
    found, so keys in field order are found at once. Frozen, so that the events without args
    (flows, a quarter of a GPU trace's events) all share one instead of each making its own.

    Each field costs every event's args a default to fill in and a compare for each key
    that matches no field (most of Kineto's): decoding a chunk of events with no
    ``[memory]`` one through these, not ``Args``, takes ~18% off msgspec's time
    (``chunk_decode.decode_chunk``)."""

    external_id: int = msgspec.field(default=-1, name="External id")
    # autograd's sequence number: set on the ops dispatched while grad mode records them
    seq_nr: int = msgspec.field(default=-1, name="Sequence number")
    input_values: msgspec.Raw = msgspec.field(default=RAW_EMPTY, name="Concrete Inputs")
    input_types: msgspec.Raw = msgspec.field(default=RAW_EMPTY, name="Input type")
    input_dims: msgspec.Raw = msgspec.field(default=RAW_EMPTY, name="Input Dims")
    flops: float = math.nan
    device: int = -1
    stream: int = -1
    correlation: int = -1
    copy_bytes: float = msgspec.field(default=math.nan, name="bytes")  # memcpy / memset
    name: Any = None  # metadata events: process_name / thread_name
    labels: Any = None  # metadata events: process_labels ("CPU", "GPU 0")


class Args(LeanArgs, frozen=True):
    """``LeanArgs`` and the fields of the ``[memory]`` instant events (profile_memory=True),
    which loader/memory_columns.py reads."""

    total_reserved: float = msgspec.field(default=math.nan, name="Total Reserved")
    total_allocated: float = msgspec.field(default=math.nan, name="Total Allocated")
    bytes_delta: float = msgspec.field(default=math.nan, name="Bytes")
    device_id: int = msgspec.field(default=-1, name="Device Id")
    device_type: int = msgspec.field(default=-1, name="Device Type")
    addr: float = msgspec.field(default=math.nan, name="Addr")


NO_LEAN_ARGS = LeanArgs()
NO_ARGS = Args()


class LeanEvent(msgspec.Struct, gc=False):
    """One entry of ``traceEvents`` with ``LeanArgs``; missing fields take the defaults (no
    None anywhere, so columns come out with ``np.fromiter``; an explicit JSON ``null`` fails
    validation and sends its chunk to the per-event path, which coerces it through
    ``LooseEvent``)."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = -1
    tid: int | str = -1
    ts: float = math.nan
    dur: float = math.nan
    args: LeanArgs = NO_LEAN_ARGS
    id: int | str = -1


class Event(LeanEvent):
    """One entry of ``traceEvents`` with all of ``Args``."""

    args: Args = NO_ARGS


class LooseEvent(msgspec.Struct, gc=False):
    """An event whose fields failed typed decoding: everything as plain JSON values."""

    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: Any = None
    id: Any = None


class Top(msgspec.Struct):
    """A Kineto JSON object: the events plus the top-level metadata kept on TraceFile."""

    traceEvents: list[Event]
    schemaVersion: Any = None
    deviceProperties: Any = None
    distributedInfo: Any = None
    traceName: Any = None
    displayTimeUnit: Any = None
    baseTimeNanoseconds: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    record_shapes: Any = None
    with_flops: Any = None


class TopRaw(msgspec.Struct):
    """Same as Top, with events left undecoded (the per-event fallback path)."""

    traceEvents: list[msgspec.Raw]
    schemaVersion: Any = None
    deviceProperties: Any = None
    distributedInfo: Any = None
    traceName: Any = None
    displayTimeUnit: Any = None
    baseTimeNanoseconds: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    record_shapes: Any = None
    with_flops: Any = None


METADATA_FIELDS: tuple[str, ...] = tuple(f for f in Top.__struct_fields__ if f != "traceEvents")

TOP_DECODER = msgspec.json.Decoder(Top, strict=False)
TOP_RAW_DECODER = msgspec.json.Decoder(TopRaw, strict=False)
EVENTS_DECODER = msgspec.json.Decoder(list[Event], strict=False)
LEAN_EVENTS_DECODER = msgspec.json.Decoder(list[LeanEvent], strict=False)
EVENTS_RAW_DECODER = msgspec.json.Decoder(list[msgspec.Raw], strict=False)
EVENT_DECODER = msgspec.json.Decoder(Event, strict=False)
LOOSE_EVENT_DECODER = msgspec.json.Decoder(LooseEvent)
KEYS_DECODER = msgspec.json.Decoder(dict[str, msgspec.Raw])
