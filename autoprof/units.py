"""Numbers for people, in one format everywhere (CLI, viewer, verdict and diagnostic text).

Durations arrive in microseconds (Kineto's unit) and are shown in the largest unit that keeps
them readable: ``8.3 µs``, ``1.25 ms``, ``4.4 s``; missing values are ``n/a``.
"""

from __future__ import annotations

import math
from typing import Any


def fmt_us(value_us: float | int | None) -> str:
    """A duration given in microseconds, in the largest unit that keeps it readable."""
    if value_us is None:
        return "n/a"
    v = float(value_us)
    if math.isnan(v):
        return "n/a"
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.3g} s" if a < 1e8 else f"{v / 1e6:,.0f} s"
    if a >= 1e3:
        return f"{v / 1e3:.3g} ms" if a < 1e5 else f"{v / 1e3:,.0f} ms"
    if a >= 1:
        return f"{v:.3g} µs"
    if a == 0:
        return "0 µs"
    return f"{v * 1e3:.3g} ns"


def fmt_pct(value_pct: float | int | None) -> str:
    if value_pct is None:
        return "n/a"
    v = float(value_pct)
    if math.isnan(v):
        return "n/a"
    return f"{v:.1f} %" if abs(v) >= 0.1 or v == 0 else f"{v:.2g} %"


_UNIT_TOKENS = {"us": 1.0, "ms": 1e3, "ns": 1e-3}


def fmt_value(key: str, value: object) -> str:
    """Format one evidence value using the unit its key names (`_us`, `_ms`, `_ns`, `_pct`,
    anywhere in the key: `step_cpu_span_us_median`)."""
    if value is None:
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    tokens = key.lower().split("_")
    if "pct" in tokens:
        return fmt_pct(value)
    for token, to_us in _UNIT_TOKENS.items():
        if token in tokens:
            return fmt_us(float(value) * to_us)
    if isinstance(value, float):
        return f"{value:.4g}"
    return f"{value:,}"


def fmt_bytes(value: float | int | None) -> str:
    """A size in bytes, in binary units: ``512 B``, ``64 MiB``, ``2.17 GiB``."""
    if value is None:
        return "n/a"
    v = float(value)
    if math.isnan(v):
        return "n/a"
    for unit, size in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(v) >= size:
            return f"{v / size:.3g} {unit}"
    return f"{v:.0f} B"


def fmt_flops(value: float | int | None) -> str:
    """A count of floating-point operations in decimal units: ``512 FLOP``, ``3.4 GFLOP``,
    ``1.25 TFLOP``."""
    if value is None:
        return "n/a"
    v = float(value)
    if math.isnan(v):
        return "n/a"
    for unit, size in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6),
                       ("kFLOP", 1e3)):
        if abs(v) >= size:
            return f"{v / size:.3g} {unit}"
    return f"{v:.0f} FLOP"


# --- text fit for a terminal ---------------------------------------------------------------

MAX_TEXT_CHARS = 2000  # a name or message longer than this is shortened where it is printed


def safe_text(text: object, max_chars: int = MAX_TEXT_CHARS) -> str:
    """``text`` as one printable line: control and other non-printing characters are
    escaped as Python writes them (ESC as ``\\x1b``, CR as ``\\r``, a newline as ``\\n``),
    so a name from a trace can never move the cursor, clear the screen or retitle the
    terminal; longer than ``max_chars``, it is cut and says how long it was."""
    value = str(text)
    if len(value) <= max_chars and value.isprintable():
        return value
    cut = len(value) > max_chars
    head = value[:max_chars] if cut else value
    escaped = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                      for c in head)
    if len(escaped) > max_chars:
        escaped, cut = escaped[:max_chars], True
    return f"{escaped}... ({len(value):,} characters, cut)" if cut else escaped


def safe_strings(value: Any, max_chars: int = MAX_TEXT_CHARS) -> Any:
    """Every string in a JSON-like value (dict keys too) through :func:`safe_text`: what the
    text and markdown renderers format, so no field they print can carry control
    characters or megabytes of name."""
    if isinstance(value, str):
        return safe_text(value, max_chars)
    if isinstance(value, dict):
        return {safe_strings(k, max_chars): safe_strings(v, max_chars)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [safe_strings(v, max_chars) for v in value]
    return value
