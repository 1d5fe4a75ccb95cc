"""An event whose fields have odd types (a null, a float pid, a nested name), which the
strict decoder refused, read as a typed ``Event`` (``chunk_decode.py`` falls back to it)."""

from __future__ import annotations

import math
from typing import Any

import msgspec

from autoprof.analysis.loader.columns import id_or_none
from autoprof.analysis.loader.schema import RAW_EMPTY, Args, Event, LooseEvent


def float_or_nan(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


_MEMORY_ARGS = {"bytes_delta": "Bytes", "total_allocated": "Total Allocated",
                "total_reserved": "Total Reserved", "addr": "Addr"}


def coerce_loose(loose: LooseEvent) -> Event:
    """An event with odd field types (null, float pid, nested name) as a typed Event."""
    raw_args = loose.args if isinstance(loose.args, dict) else {}

    def text(value: Any) -> str:
        if value is None:
            return ""
        return value if isinstance(value, str) else msgspec.json.encode(value).decode()

    def ident(value: Any) -> int | str:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        found = id_or_none(value)
        return -1 if found is None else found

    dims = raw_args.get("Input Dims")
    types = raw_args.get("Input type")
    concrete = raw_args.get("Concrete Inputs")
    args = Args(
        correlation=int(ident(raw_args.get("correlation"))),
        external_id=int(ident(raw_args.get("External id"))),
        seq_nr=int(ident(raw_args.get("Sequence number"))),
        flops=float_or_nan(raw_args.get("flops")),
        copy_bytes=float_or_nan(raw_args.get("bytes")),
        input_dims=msgspec.Raw(msgspec.json.encode(dims)) if dims is not None else RAW_EMPTY,
        input_types=(msgspec.Raw(msgspec.json.encode(types)) if types is not None
                     else RAW_EMPTY),
        input_values=(msgspec.Raw(msgspec.json.encode(concrete)) if concrete is not None
                      else RAW_EMPTY),
        device=int(ident(raw_args.get("device"))),
        stream=int(ident(raw_args.get("stream"))),
        name=raw_args.get("name"),
        labels=raw_args.get("labels"),
        **{f: float_or_nan(raw_args.get(k)) for f, k in _MEMORY_ARGS.items()},
        device_id=int(ident(raw_args.get("Device Id"))),
        device_type=int(ident(raw_args.get("Device Type"))),
    )
    return Event(
        ph=text(loose.ph),
        cat=text(loose.cat),
        name=text(loose.name),
        pid=ident(loose.pid),
        tid=ident(loose.tid),
        ts=float_or_nan(loose.ts),
        dur=float_or_nan(loose.dur),
        args=args,
        id=ident(loose.id),
    )
