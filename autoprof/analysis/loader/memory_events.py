"""The ``[memory]`` instant events of a trace (``profile_memory=True``) as a second, small table.

torch.profiler writes one instant event per allocation and per free, on the CPU thread that
made it, whatever the device::

    {"ph": "i", "name": "[memory]", "pid": 7, "tid": 7, "ts": 120.5,
     "args": {"Bytes": 1048576, "Total Allocated": 2098152, "Total Reserved": 0,
              "Addr": 140499585851456, "Device Type": 0, "Device Id": -1}}

becomes one row of the memory table, sorted by (rank, ts_us):

| ts_us | pid | tid | device | bytes | allocated_bytes | reserved_bytes | addr | rank |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
| 120.5 | 7 | 7 | cpu | 1048576 | 2098152 | 0 | 140499585851456 | 0 |
| 130.0 | 7 | 7 | cuda:0 | -512 | 9216 | 2097152 | 139788367691776 | 0 |

``bytes`` is positive for an allocation and negative for a free; ``allocated_bytes`` and
``reserved_bytes`` are the allocator's totals on that device just after it. Events without a
finite ``ts`` or ``Bytes`` are dropped (with a count in the warnings), and so are events with a
byte count beyond 4 EiB (``Bytes: 1e300``, a garbled total): one warning, never a -1 B peak.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa

from autoprof.analysis.loader.memory_columns import MemoryColumns

MEMORY_COLUMNS: tuple[str, ...] = (
    "ts_us", "pid", "tid", "device", "bytes", "allocated_bytes", "reserved_bytes", "addr",
    "rank",
)
# c10::DeviceType codes as torch.profiler writes them in "Device Type"
_DEVICE_TYPES = {0: "cpu", 1: "cuda", 6: "hip", 12: "xpu", 13: "mps", 19: "mtia",
                 20: "privateuseone"}


def device_label(device_type: int, device_id: int) -> str:
    """``(0, -1)`` -> ``"cpu"``, ``(1, 0)`` -> ``"cuda:0"``; unknown types keep their code."""
    kind = _DEVICE_TYPES.get(device_type, f"device{device_type}")
    return kind if kind == "cpu" or device_id < 0 else f"{kind}:{device_id}"


MAX_MEMORY_BYTES = 2**62  # a byte count beyond this is garbled (and near int64's limit)
HUGE_BYTES_NOTE = "byte counts beyond 4 EiB"  # in the load warning the CLI shows


def empty_memory() -> pd.DataFrame:
    """The memory table with no rows (right columns and dtypes)."""
    return _frame(np.empty(0), *(np.empty(0, np.int64),) * 2, [],
                  *(np.empty(0, np.int64),) * 4, rank=0)


def _frame(ts: np.ndarray, pid: np.ndarray, tid: np.ndarray,
           device: list[str] | pd.Categorical,
           delta: np.ndarray, allocated: np.ndarray, reserved: np.ndarray, addr: np.ndarray,
           rank: int) -> pd.DataFrame:
    return pd.DataFrame({
        "ts_us": ts.astype(np.float64, copy=False),
        "pid": pid, "tid": tid,
        "device": pd.Categorical(device),
        "bytes": delta, "allocated_bytes": allocated, "reserved_bytes": reserved,
        "addr": addr,
        "rank": np.full(len(ts), rank, dtype=np.int64),
    })


def _garbled(columns: MemoryColumns) -> npt.NDArray[np.bool_]:
    """Events any of whose byte counts (Bytes, Total Allocated, Total Reserved) is beyond
    MAX_MEMORY_BYTES: one garbled total would show as a peak of -1 B, so the event goes."""
    with np.errstate(invalid="ignore"):
        return np.asarray(
            (np.abs(columns.bytes_delta) > MAX_MEMORY_BYTES)
            | (np.abs(columns.total_allocated) > MAX_MEMORY_BYTES)
            | (np.abs(columns.total_reserved) > MAX_MEMORY_BYTES), dtype=bool)


def build_memory(columns: MemoryColumns, warnings: list[str], rank: int = 0) -> pd.DataFrame:
    """The memory table of one trace (see the module doc), sorted by ts_us."""
    if not len(columns):
        return empty_memory()
    keep = np.isfinite(columns.ts) & np.isfinite(columns.bytes_delta)
    dropped = int((~keep).sum())
    if dropped:
        warnings.append(f"dropped {dropped} memory events without a finite ts or Bytes")
    huge = keep & _garbled(columns)
    if huge.any():  # no device holds 4 EiB: a garbled count, which int64 could not hold
        keep &= ~huge
        warnings.append(f"dropped {int(huge.sum())} memory events with {HUGE_BYTES_NOTE} "
                        f"({MAX_MEMORY_BYTES:,}): not a real allocation")
    order = np.flatnonzero(keep)
    order = order[np.argsort(columns.ts[order], kind="stable")]

    def whole(values: np.ndarray) -> npt.NDArray[np.int64]:
        """As int64; a value that is not finite or beyond MAX_MEMORY_BYTES (an int64 could
        not hold it: numpy would warn and wrap it negative) is -1, unknown."""
        picked = values[order]
        known = np.isfinite(picked) & (np.abs(picked) <= MAX_MEMORY_BYTES)
        return np.where(known, picked, -1).astype(np.int64)

    # one code per (type, id) pair: ids are small (-1 for the CPU), types c10's few codes
    pair = columns.device_type[order] * (1 << 32) + (columns.device_id[order] + 1)
    codes, inverse = np.unique(pair, return_inverse=True)
    labels = [device_label(int(c) >> 32, int(c) % (1 << 32) - 1) for c in codes]
    device = pd.Categorical.from_codes(np.asarray(inverse).ravel(), labels)
    return _frame(columns.ts[order], columns.pid[order], columns.tid[order], device,
                  whole(columns.bytes_delta), whole(columns.total_allocated),
                  whole(columns.total_reserved), whole(columns.addr), rank)


def to_ipc(memory: pd.DataFrame) -> bytes:
    """The memory table as Arrow IPC stream bytes (stored inside the events cache file)."""
    table = pa.Table.from_pandas(memory, preserve_index=False)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def from_ipc(data: bytes) -> pd.DataFrame:
    """The inverse of :func:`to_ipc`; raises ValueError when the columns are not the table's."""
    table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
    memory = table.to_pandas()
    if tuple(memory.columns) != MEMORY_COLUMNS:
        raise ValueError("cached memory table holds other columns")
    return memory
