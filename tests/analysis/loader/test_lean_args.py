"""decode_chunk reads args without the [memory] fields (LeanArgs) until a chunk holds a
[memory] event, then with them (Args) from that chunk on: the columns, memory columns and
metadata are those of decoding every chunk with Args."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from autoprof.analysis.loader.chunk_decode import decode_chunk
from autoprof.analysis.loader.columns import ColumnBuilder, RawColumns


def _op(i: int) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 3}", "pid": 1, "tid": 1,
            "ts": 10.0 * i, "dur": 5.0,
            "args": {"External id": i, "Sequence number": i, "Input Dims": [[i % 2, 4]],
                     "Input type": ["float"], "Concrete Inputs": [""], "Ev Idx": i}}


def _memory(i: int) -> dict[str, Any]:
    return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1,
            "ts": 10.0 * i + 1, "s": "t",
            "args": {"Total Reserved": 2048, "Total Allocated": 1024 + i, "Bytes": 512,
                     "Addr": 4096 + i, "Device Id": 0, "Device Type": 1}}


def _meta() -> dict[str, Any]:
    return {"ph": "M", "name": "process_labels", "pid": 1, "tid": 0,
            "args": {"labels": "CPU", "name": "python"}}


def _decode(chunks: list[list[dict[str, Any]]], lean: bool) -> tuple[ColumnBuilder, RawColumns]:
    builder = ColumnBuilder()
    builder.lean_args = lean
    for events in chunks:
        builder.append(decode_chunk(json.dumps(events).encode(), builder))
    return builder, builder.finish()


def _same(got: RawColumns, want: RawColumns) -> None:
    for name, value in vars(want).items():
        other = getattr(got, name)
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(other, value, err_msg=name)
        elif name == "memory":
            for field, column in vars(value).items():
                np.testing.assert_array_equal(getattr(other, field), column, err_msg=field)
        else:
            assert other == value, name


def test_a_memory_event_switches_to_args_from_its_chunk_on() -> None:
    chunks = [[_op(i) for i in range(6)] + [_meta()],
              [_op(i) for i in range(6, 9)] + [_memory(9)] + [_op(10)],
              [_op(11), _memory(12)]]
    lean, got = _decode(chunks, lean=True)
    _, want = _decode(chunks, lean=False)
    assert not lean.lean_args
    _same(got, want)
    assert got.memory.total_allocated.tolist() == [1033.0, 1036.0]
    assert lean.metadata.process_labels == {1: "CPU"}


def test_chunks_without_memory_events_stay_lean_with_the_same_columns() -> None:
    chunks = [[_op(i) for i in range(6)], [_op(i) for i in range(6, 12)] + [_meta()]]
    lean, got = _decode(chunks, lean=True)
    _, want = _decode(chunks, lean=False)
    assert lean.lean_args
    _same(got, want)
    assert len(got.memory) == 0 and len(got) == 13
