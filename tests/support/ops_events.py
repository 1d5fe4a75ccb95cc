"""Hand-built events tables with the contract's columns (docs/architecture.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.loader.events import TEXT_COLUMNS

_GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"}
_WORK_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def events(*rows: dict[str, Any]) -> pd.DataFrame:
    """One row per dict; give ``name, cat, ts_us, dur_us`` and any of ``parent``,
    ``op_row``, ``launch_row``, ``flops``, ``input_dims``, ``rank``; the rest is derived."""
    table = []
    for row in rows:
        cat = row["cat"]
        full = {
            "name": row["name"],
            "cat": cat,
            "lane": "gpu" if cat in _GPU_CATS else "cpu",
            "is_gpu_work": cat in _WORK_CATS,
            "pid": 1 if cat not in _GPU_CATS else 0,
            "tid": 1 if cat not in _GPU_CATS else 7,
            "device": 0 if cat in _GPU_CATS else -1,
            "stream": 7 if cat in _GPU_CATS else -1,
            "ts_us": float(row["ts_us"]),
            "dur_us": float(row["dur_us"]),
            "end_us": float(row["ts_us"]) + float(row["dur_us"]),
            "self_us": np.nan,
            "depth": 0,
            "parent": row.get("parent", -1),
            "step": -1,
            "correlation": -1,
            "external_id": -1,
            "launch_row": row.get("launch_row", -1),
            "op_row": row.get("op_row", -1),
            "flops": float(row.get("flops", np.nan)),
            "input_dims": row.get("input_dims", ""),
            "rank": row.get("rank", 0),
        }
        table.append(full)
    frame = pd.DataFrame(table)
    for col in TEXT_COLUMNS:  # categoricals, as the loader builds them
        if col in frame:
            frame[col] = frame[col].astype("category")
    return frame


def cpu(name: str, ts_us: float, dur_us: float, parent: int = -1, **extra: Any) -> dict:
    return {"name": name, "cat": "cpu_op", "ts_us": ts_us, "dur_us": dur_us,
            "parent": parent, **extra}


def annotation(name: str, ts_us: float, dur_us: float, parent: int = -1, **extra: Any) -> dict:
    return {"name": name, "cat": "user_annotation", "ts_us": ts_us, "dur_us": dur_us,
            "parent": parent, **extra}


def launch(ts_us: float, dur_us: float, parent: int) -> dict:
    return {"name": "cudaLaunchKernel", "cat": "cuda_runtime", "ts_us": ts_us,
            "dur_us": dur_us, "parent": parent}


def kernel(name: str, ts_us: float, dur_us: float, op_row: int = -1, launch_row: int = -1,
           **extra: Any) -> dict:
    return {"name": name, "cat": "kernel", "ts_us": ts_us, "dur_us": dur_us,
            "op_row": op_row, "launch_row": launch_row, **extra}


def row(ops: pd.DataFrame, name: str, lane: str = "cpu") -> pd.Series:
    """The one row of ``ops`` for ``name`` on ``lane``."""
    match = ops[(ops["name"] == name) & (ops["lane"] == lane)]
    assert len(match) == 1, f"{name!r} on {lane}: {len(match)} rows in\n{ops}"
    return match.iloc[0]
