"""Student's t two-sided 95% quantiles: the one table behind every interval autoprof states
from a few samples (the diff gate's runs needed, ``autoprof.compare``'s paired blocks, the
profiler's share of a call). Plain Python, no numpy or scipy."""

from __future__ import annotations

import math

# by degrees of freedom; between rows the nearest smaller df's (the wider: conservative)
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
         9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042}
LARGE_DF = 30  # past this, the normal's 1.96 + 2.4 / df (within 0.1% of t)


def t975(df: float) -> float:
    """The two-sided 95% t quantile for ``df`` degrees of freedom (a Welch df may be
    fractional); infinite below 1."""
    if df < 1:
        return math.inf
    if df > LARGE_DF:
        return 1.96 + 2.4 / df
    return _T975[max(k for k in _T975 if k <= df)]
