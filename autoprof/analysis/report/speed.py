"""One number per fix: the estimate with its interval where a fix is predicted, else the bound.

An opportunity with a predicted fix reads "cuda-graph 5.20x (likely 4.16-6.93x)": the
estimate and the interval a measured gain is expected in (`predicted_interval`,
diagnose/predictions.py), never an "up to" below it. One without reads "up to 1.52x", the
bound of removing its time entirely. Every report (text, Markdown, notebook, viewer) says it
with these words.
"""

from __future__ import annotations

from typing import Any


def predicted(o: dict[str, Any]) -> bool:
    """Whether `o` carries a predicted fix with its interval."""
    return bool(o.get("fix")) and isinstance(o.get("predicted_speedup"), int | float) and \
        isinstance(o.get("predicted_interval"), dict)


def speed_text(o: dict[str, Any], with_fix: bool = True) -> str:
    """`o`'s estimate and interval, or its bound ("up to 1.52x"), or "n/a"."""
    if predicted(o):
        band = o["predicted_interval"]
        fix = f"{o['fix']} " if with_fix else ""
        return (f"{fix}{float(o['predicted_speedup']):.2f}x (likely "
                f"{float(band['low']):.2f}-{float(band['high']):.2f}x)")
    if o.get("max_speedup"):
        return f"up to {float(o['max_speedup']):.2f}x"
    return "n/a"
