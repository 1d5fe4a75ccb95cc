"""Inside a line that calls into a library: where that line's time goes in the library.

A user's line such as ``model.generate(x)`` or ``trainer.train()`` holds every op the
library runs, so a table by line has one row. Each op's ``library`` frame
(``trace.library_frame``: the innermost frame of an installed package other than torch below
the user's frames: the library code that called torch) splits that row:

| source | library | self_cpu_us | gpu_us |
| --- | --- | --- | --- |
| gen.py:9 (main) | transformers/models/llama/modeling_llama.py:300 (forward) | 812.0 | 3900.0 |
| gen.py:9 (main) | transformers/generation/utils.py:2400 (_sample) | 95.0 | 40.0 |

Times are means per measured step, like the line table's (metrics/lines/table.py).
"""

from __future__ import annotations

import pandas as pd

from autoprof.analysis.metrics.lines.match import Attribution, user_ops

LIBRARY_COLUMNS = ("source", "library", "self_cpu_us", "gpu_us")
TOP_FRAMES = 3


def library_times(events: pd.DataFrame, attribution: Attribution) -> pd.DataFrame:
    """Per (line, library frame): the self CPU time of the ops and the GPU work they launched,
    per step, heaviest first within each line (columns LIBRARY_COLUMNS); empty when no op
    ran under a library frame."""
    rows = attribution.rows
    if rows.empty or "library" not in rows.columns:
        return pd.DataFrame(columns=list(LIBRARY_COLUMNS))
    rows = rows[(rows["source"] != "") & (rows["library"] != "")]
    if rows.empty:
        return pd.DataFrame(columns=list(LIBRARY_COLUMNS))
    ops = user_ops(events)
    steps = max(1, int(ops["step"].nunique()))
    joined = events.loc[rows.index, ["self_us", "dur_us", "is_gpu_work"]].join(rows)
    gpu = joined["is_gpu_work"].to_numpy(dtype=bool)
    joined["self_cpu_us"] = joined["self_us"].where(~gpu & joined.index.isin(ops.index), 0.0)
    joined["gpu_us"] = joined["dur_us"].where(gpu, 0.0)
    table = joined.groupby(["source", "library"], sort=False)[["self_cpu_us", "gpu_us"]].sum()
    table = (table / steps).reset_index()
    order = (table["self_cpu_us"] + table["gpu_us"]).sort_values(ascending=False,
                                                                  kind="stable").index
    return table.loc[order, list(LIBRARY_COLUMNS)].reset_index(drop=True)


def frames_of(table: pd.DataFrame, source: str, n: int = TOP_FRAMES) -> list[dict[str, object]]:
    """The ``n`` heaviest library frames of one line, as JSON-able rows."""
    if table.empty:
        return []
    mine = table[table["source"] == source].head(n)
    return [{"frame": str(r["library"]), "self_cpu_us": float(r["self_cpu_us"]),
             "gpu_us": float(r["gpu_us"])} for r in mine.to_dict(orient="records")]
