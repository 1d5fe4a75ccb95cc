"""The roofline to draw: for each dtype, attainable TFLOP/s = min(peak, intensity x
bandwidth) over a range of arithmetic intensities (FLOPs / byte), ridge point included; what
the viewer's Roofline page draws under the kernels of metrics/efficiency.py."""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.metrics.efficiency import Efficiency
from autoprof.analysis.metrics.peaks import Peak


def roof_line(peak: Peak, dtype: str, lo: float, hi: float, points: int = 64) -> pd.DataFrame:
    """The roofline of ``dtype`` from ``lo`` to ``hi`` FLOPs/byte (log-spaced, with the ridge
    point itself): ``intensity``, ``tflops`` = min(peak, intensity x bandwidth), ``roof``
    (the dtype). Empty when the device has no figures for ``dtype``."""
    top, ridge = peak.for_dtype(dtype), peak.ridge(dtype)
    if top is None or ridge is None or not (0 < lo < hi):
        return pd.DataFrame({"intensity": [], "tflops": [], "roof": []})
    xs = np.unique(np.append(np.geomspace(lo, hi, points), ridge if lo < ridge < hi else lo))
    bw = float(peak.gbps or 0)
    return pd.DataFrame({"intensity": xs, "tflops": np.minimum(top, xs * bw / 1e3),
                         "roof": dtype})


def roof_lines(eff: Efficiency, points: int = 64) -> pd.DataFrame:
    """The roofs of every dtype the kernels ran in, over their intensities with a margin of
    4x either side and the ridge points; what the Roofline page draws."""
    k = eff.kernels
    x = k["intensity"].astype(float)
    x = x[np.isfinite(x) & (x > 0)]
    dtypes = [d for d in dict.fromkeys(k["dtype"].astype(str)) if eff.peak.for_dtype(d)]
    if x.empty or not dtypes:
        return pd.DataFrame({"intensity": [], "tflops": [], "roof": []})
    ridges = [r for r in (eff.peak.ridge(d) for d in dtypes) if r]
    lo, hi = min([float(x.min()), *ridges]) / 4, max([float(x.max()), *ridges]) * 4
    return pd.concat([roof_line(eff.peak, d, lo, hi, points) for d in dtypes],
                     ignore_index=True)
