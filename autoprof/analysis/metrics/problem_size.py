"""The problem size of a run, for charts of a size sweep: the manifest's ``size`` / ``n`` /
``problem_size``, else the largest input dimension of the first op, else a folder named like
``n64``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from autoprof.runfolder import Manifest

_INT = re.compile(r"\d+")
_SIZE_NAME = re.compile(r"^(?:n|size)[-_=]?(\d+)$", re.IGNORECASE)


def first_shapes(events: pd.DataFrame) -> str:
    """`input_dims` of the first CPU op (in profiler steps when there are any) with shapes."""
    is_op = events["cat"].eq("cpu_op").to_numpy(dtype=bool)
    ops = events[is_op & events["input_dims"].ne("").to_numpy(dtype=bool)]
    in_steps = ops[ops["step"].to_numpy() >= 0]
    pick = in_steps if not in_steps.empty else ops
    return "" if pick.empty else str(pick.sort_values("ts_us").iloc[0]["input_dims"])


def _size_in_path(path: str) -> float:
    for part in reversed(Path(path).parts[-3:]):
        m = _SIZE_NAME.match(part.split(".")[0])
        if m:
            return float(m.group(1))
    return np.nan


def stated_size(record: Manifest | None, path: str = "") -> float:
    """The problem size the user stated: the record's `size` / `n` / `problem_size`, else a
    folder or file named like `n64`; NaN otherwise (never the first op's dimension, a guess
    that may be an op of the caller's data loader). What a runs list shows."""
    if record is not None and record.problem_size is not None:
        return record.problem_size
    return _size_in_path(path)


def run_size(record: Manifest | None, events: pd.DataFrame, path: str = "") -> float:
    """The problem size: the record's `size` / `n` / `problem_size` (its own keys, else its
    options: ``Manifest.problem_size``), else the largest input dimension of the first op
    with recorded shapes, else a folder or file named like `n64`, `size64`, `size-64` on the
    run's path (the last three parts); NaN when none is known."""
    if record is not None and record.problem_size is not None:
        return record.problem_size
    dims = [int(d) for d in _INT.findall(first_shapes(events))] if "input_dims" in events else []
    return float(max(dims)) if dims else _size_in_path(path)
